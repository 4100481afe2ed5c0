//! A script's gRPC calls (k6's `k6/net/grpc`) on pado's own HTTP/2 client: a
//! unary `invoke()`, `grpc.Stream`s (client, server and bidirectional: written
//! and read as the script goes, on the VU's own task), and `connect(addr, {
//! reflect: true })`'s questions to the server's reflection service. Each call is
//! one request of its method's series (or its `name` tag's) with the gRPC code as
//! its status; a stream also counts among `grpc_streams` with the messages it
//! sent and received. A connection is the VU's own, kept across iterations, per
//! server and TLS settings.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::select_all;
use pado_http::grpc::GrpcRequest;
use pado_http::grpc_stream::{open_stream, GrpcEnd, GrpcStream, GrpcStreamEvent};
use pado_http::{H2Pool, Origin, Protocol, TlsSettings};
use pado_metrics::ErrorKind;

use crate::runtime::worker::WorkerCtx;
use crate::script::{
    ScriptGrpcCall, ScriptGrpcReply, ScriptGrpcStreamCall, ScriptGrpcStreamReply, ScriptGrpcTls,
};

use super::finish::{ended_at, sample_of};
use super::script_debug::{grpc_request_head, script_grpc_trace};
use super::script_net::origin_of;
use super::Vu;

/// A gRPC call's default deadline (k6's `invoke`: 2 minutes).
const GRPC_TIMEOUT: Duration = Duration::from_secs(120);
/// A stream's deadline when the script gives none: the iteration's end bounds it.
const STREAM_TIMEOUT: Duration = Duration::from_secs(3600);
/// gRPC servers a VU keeps a connection to at once (the oldest makes room).
const MAX_GRPC_TARGETS: usize = 8;

/// One open stream of a script.
pub(super) struct OpenStream {
    s: GrpcStream,
    series: u32,
    deadline: Option<Instant>,
    /// What `--http-debug` shows of the call when it ends (only with an
    /// observer).
    debug: Option<Box<GrpcDebug>>,
}

/// A call as `--http-debug` shows it: where it ran, its name, its origin and
/// its request head (method and metadata).
struct GrpcDebug {
    scope: String,
    name: String,
    origin: String,
    request: Vec<u8>,
}

impl GrpcDebug {
    /// Show the call of VU `vu` ended with `reply` (`messages`: sent and
    /// received).
    fn trace(
        &self,
        ctx: &crate::runtime::worker::WorkerCtx,
        vu: u64,
        sample: &pado_metrics::RequestSample,
        reply: &ScriptGrpcReply,
        messages: (u64, u64),
    ) {
        script_grpc_trace(
            ctx,
            (vu, &self.scope, &self.name),
            (&self.origin, &self.request),
            sample,
            (reply, messages),
        );
    }
}

/// The connection key of a call: scheme, address, and its own TLS when it gave one.
fn key_of(call: &ScriptGrpcCall) -> String {
    let scheme = if call.plaintext { "http" } else { "https" };
    match &call.tls {
        None => format!("{scheme}://{}", call.target),
        Some(t) => {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (&t.cacerts, &t.cert, &t.key).hash(&mut h);
            format!("{scheme}://{}#{:x}", call.target, h.finish())
        }
    }
}

/// The origin of a call with the script's own TLS settings.
async fn origin_with_tls(
    ctx: &WorkerCtx,
    url: &url::Url,
    t: &ScriptGrpcTls,
) -> Result<Origin, String> {
    let settings = TlsSettings::from_pem(ctx.plan.tls.insecure, &t.cacerts, &t.cert, &t.key)
        .map_err(|e| format!("grpc connect: {e}"))?;
    let settings = Arc::new(settings);
    let u = url.clone();
    let make = move || {
        let s2 = settings.clone();
        Origin::for_url_with(
            &u,
            Protocol::Http2,
            || settings.client_config(),
            || s2.client_config_alpn(&[b"h2"]),
        )
    };
    if matches!(url.host(), Some(url::Host::Domain(_))) {
        tokio::task::spawn_blocking(make)
            .await
            .map_err(|e| e.to_string())?
    } else {
        make()
    }
}

/// A call that reached no server: why, in words.
fn grpc_failed(why: String) -> ScriptGrpcReply {
    ScriptGrpcReply {
        error: why,
        ..ScriptGrpcReply::default()
    }
}

impl Vu {
    /// The VU's connection for `call`'s server (made on first use).
    async fn grpc_connection(
        &mut self,
        call: &ScriptGrpcCall,
    ) -> Result<(Rc<Origin>, Rc<H2Pool>), String> {
        let key = key_of(call);
        if let Some((_, o, p)) = self.net.grpc.iter().find(|(k, _, _)| *k == key) {
            return Ok((o.clone(), p.clone()));
        }
        let scheme = if call.plaintext { "http" } else { "https" };
        let url = match url::Url::parse(&format!("{scheme}://{}", call.target)) {
            Ok(u) if u.host().is_some() => u,
            _ => return Err(format!("`{}` is not a host:port address", call.target)),
        };
        let ctx = self.ctx.clone();
        let origin = match &call.tls {
            Some(t) if !call.plaintext => origin_with_tls(&ctx, &url, t).await?,
            _ => origin_of(&ctx, &url, Protocol::Http2).await?,
        };
        let (origin, pool) = (Rc::new(origin), Rc::new(H2Pool::new(100)));
        if self.net.grpc.len() >= MAX_GRPC_TARGETS {
            self.net.grpc.remove(0);
        }
        self.net.grpc.push((key, origin.clone(), pool.clone()));
        Ok((origin, pool))
    }

    /// Open a stream of `call.method`: the open stream, or the failed call
    /// (recorded) as its reply.
    async fn grpc_open(
        &mut self,
        scope: &str,
        call: &ScriptGrpcCall,
        timeout: Duration,
    ) -> Result<OpenStream, ScriptGrpcReply> {
        let ctx = self.ctx.clone();
        let name = call.name.as_deref().unwrap_or(&call.method);
        let series = ctx.script_series(name, None, &[]);
        let t_start = Instant::now();
        let debug = ctx.observer.is_some().then(|| {
            let scheme = if call.plaintext { "http" } else { "https" };
            Box::new(GrpcDebug {
                scope: scope.to_string(),
                name: name.to_string(),
                origin: format!("{scheme}://{}", call.target),
                request: grpc_request_head(&call.method, &call.metadata),
            })
        });
        let (origin, pool) = match self.grpc_connection(call).await {
            Ok(v) => v,
            Err(why) => {
                let reply = grpc_failed(why);
                if let Some(d) = &debug {
                    let sample = pado_metrics::RequestSample {
                        failed: true,
                        ..Default::default()
                    };
                    d.trace(&ctx, self.id, &sample, &reply, (0, 0));
                }
                return Err(reply);
            }
        };
        let request = GrpcRequest::new(&origin, &call.method, &call.metadata, timeout)
            .map_err(|e| grpc_failed(e.to_string()))?;
        let max = call.max_message.unwrap_or(ctx.plan.max_body);
        match open_stream(&pool, &origin, &request, timeout, max).await {
            Ok(s) => Ok(OpenStream {
                s,
                series,
                deadline: Some(t_start + timeout),
                debug,
            }),
            Err(ex) => {
                let (end, duration) = ended_at(&ex, None, t_start);
                let sample = sample_of(&ex, ex.error, (None, t_start), duration);
                ctx.record(series, &sample, end);
                let reply = grpc_failed(
                    ex.reason
                        .map(str::to_string)
                        .or(ex.error.map(|e| e.as_str().to_string()))
                        .unwrap_or_default(),
                );
                if let Some(d) = &debug {
                    d.trace(&ctx, self.id, &sample, &reply, (0, 0));
                }
                Err(reply)
            }
        }
    }

    /// Record an ended call under its series (`stream`: among `grpc_streams`),
    /// and its reply for the script.
    fn grpc_ended(&self, os: &OpenStream, end: GrpcEnd, stream: bool) -> ScriptGrpcReply {
        let ex = &os.s.exchange;
        let t_start = os.s.started();
        let (at, duration) = ended_at(ex, None, t_start);
        let code = end.code.unwrap_or(0);
        let mut error = ex.error;
        if error.is_none() && code != 0 {
            error = Some(ErrorKind::of_grpc_code(code));
        }
        let mut sample = sample_of(ex, error, (None, t_start), duration);
        sample.status = if ex.error.is_none() || end.code.is_some() {
            code
        } else {
            0
        };
        sample.failed = error.is_some();
        if stream {
            self.ctx
                .record_grpc_stream(os.series, &sample, os.s.received, os.s.sent, at);
        } else {
            self.ctx.record(os.series, &sample, at);
        }
        let reply = ScriptGrpcReply {
            code: end.code,
            messages: Vec::new(),
            error: end.message,
            headers: os.s.headers.clone(),
            trailers: end.trailers,
        };
        if let Some(d) = &os.debug {
            d.trace(
                &self.ctx,
                self.id,
                &sample,
                &reply,
                (os.s.sent, os.s.received),
            );
        }
        reply
    }

    /// A script's unary call (`client.invoke()`): the request, every reply, the
    /// status with the server's head and trailers.
    pub(super) async fn script_grpc(
        &mut self,
        scope: &str,
        call: &ScriptGrpcCall,
    ) -> ScriptGrpcReply {
        let timeout = call.timeout.unwrap_or(GRPC_TIMEOUT);
        let mut os = match self.grpc_open(scope, call, timeout).await {
            Ok(s) => s,
            Err(r) => return r,
        };
        if let Err(why) = os.s.write(&call.message) {
            let end = os.s.cancel(false);
            let mut r = self.grpc_ended(&os, end, call.streaming);
            r.error = why;
            return r;
        }
        os.s.end();
        let mut messages = Vec::new();
        let deadline = os.deadline.unwrap_or_else(|| Instant::now() + timeout);
        let end = loop {
            match tokio::time::timeout_at(deadline.into(), os.s.next()).await {
                Ok(GrpcStreamEvent::Message(m)) => messages.push(m),
                Ok(GrpcStreamEvent::End(e)) => break e,
                Err(_) => break os.s.cancel(true),
            }
        };
        let mut r = self.grpc_ended(&os, end, call.streaming);
        r.messages = messages;
        r
    }

    /// A script's request about its streams, or reflection.
    pub(super) async fn script_grpc_stream(
        &mut self,
        scope: &str,
        call: ScriptGrpcStreamCall,
    ) -> ScriptGrpcStreamReply {
        match call {
            ScriptGrpcStreamCall::Open(c) => {
                let timeout = c.timeout.unwrap_or(STREAM_TIMEOUT);
                match self.grpc_open(scope, &c, timeout).await {
                    Ok(os) => {
                        let slot = self.net.streams.iter().position(Option::is_none);
                        let id = match slot {
                            Some(i) => {
                                self.net.streams[i] = Some(os);
                                i
                            }
                            None => {
                                self.net.streams.push(Some(os));
                                self.net.streams.len() - 1
                            }
                        };
                        ScriptGrpcStreamReply::Opened { id: id as u32 }
                    }
                    Err(r) => ScriptGrpcStreamReply::Failed { error: r.error },
                }
            }
            ScriptGrpcStreamCall::Write { id, message } => {
                match self.net.streams.get_mut(id as usize) {
                    Some(Some(os)) => match os.s.write(&message) {
                        Ok(()) => ScriptGrpcStreamReply::Done,
                        Err(error) => ScriptGrpcStreamReply::Failed { error },
                    },
                    _ => ScriptGrpcStreamReply::Failed {
                        error: "the stream has ended".into(),
                    },
                }
            }
            ScriptGrpcStreamCall::End { id } => {
                if let Some(Some(os)) = self.net.streams.get_mut(id as usize) {
                    os.s.end();
                }
                ScriptGrpcStreamReply::Done
            }
            ScriptGrpcStreamCall::Wait { timeout } => self.grpc_wait(timeout).await,
            ScriptGrpcStreamCall::Reflect(c) => {
                let (origin, pool) = match self.grpc_connection(&c).await {
                    Ok(v) => v,
                    Err(error) => return ScriptGrpcStreamReply::Failed { error },
                };
                let timeout = c.timeout.unwrap_or(Duration::from_secs(60));
                let asked = crate::plan::reflect_services(&pool, &origin, &c.metadata);
                match tokio::time::timeout(timeout, asked).await {
                    Ok(Ok(files)) => ScriptGrpcStreamReply::Reflected { files },
                    Ok(Err(error)) => ScriptGrpcStreamReply::Failed { error },
                    Err(_) => ScriptGrpcStreamReply::Failed {
                        error: format!(
                            "the reflection service of {} did not answer within {timeout:?}",
                            c.target
                        ),
                    },
                }
            }
        }
    }

    /// The next event of any open stream, at most `timeout`; a stream whose own
    /// deadline passes ends as DeadlineExceeded.
    async fn grpc_wait(&mut self, timeout: Option<Duration>) -> ScriptGrpcStreamReply {
        if !self.net.streams.iter().any(Option::is_some) {
            return ScriptGrpcStreamReply::Idle;
        }
        let ctx = self.ctx.clone();
        let now = Instant::now();
        let soonest = self
            .net
            .streams
            .iter()
            .flatten()
            .filter_map(|s| s.deadline)
            .min();
        let wait_end = timeout.map(|t| now + t);
        let until = match (soonest, wait_end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let next = select_all(
            self.net
                .streams
                .iter_mut()
                .enumerate()
                .filter_map(|(i, s)| {
                    s.as_mut()
                        .map(|s| Box::pin(async move { (i, s.s.next().await) }))
                }),
        );
        let got = tokio::select! {
            (r, _, _) = next => Some(r),
            _ = async {
                match until {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            } => None,
            _ = ctx.stop_notify.notified(), if !ctx.stopping.get() => None,
        };
        let (i, event) = match got {
            Some(v) => v,
            None => {
                // A stream's own deadline: it ends now, DeadlineExceeded.
                let now = Instant::now();
                let late = self.net.streams.iter().position(|s| {
                    s.as_ref()
                        .and_then(|s| s.deadline)
                        .is_some_and(|d| d <= now)
                });
                let Some(i) = late else {
                    return ScriptGrpcStreamReply::Timeout;
                };
                let Some(mut os) = self.net.streams[i].take() else {
                    return ScriptGrpcStreamReply::Timeout;
                };
                let mut end = os.s.cancel(true);
                // As k6 v1.8.1 shows a stream its timeout cut: UNKNOWN, "canceled
                // by client" (a unary call's is DeadlineExceeded, as k6's too).
                end.code = Some(2);
                end.message = "canceled by client: the stream's timeout passed".into();
                let reply = self.grpc_ended(&os, end, true);
                return ScriptGrpcStreamReply::Ended {
                    id: i as u32,
                    reply: Box::new(reply),
                };
            }
        };
        match event {
            GrpcStreamEvent::Message(message) => ScriptGrpcStreamReply::Message {
                id: i as u32,
                message,
            },
            GrpcStreamEvent::End(end) => {
                let Some(os) = self.net.streams[i].take() else {
                    return ScriptGrpcStreamReply::Timeout;
                };
                let reply = self.grpc_ended(&os, end, true);
                ScriptGrpcStreamReply::Ended {
                    id: i as u32,
                    reply: Box::new(reply),
                }
            }
        }
    }

    /// The iteration ended (or was cut) with streams still open: each is
    /// cancelled and recorded as it stood (as k6, whose VU context ending
    /// closes them).
    pub(super) fn script_grpc_cut(&mut self) {
        let open: Vec<OpenStream> = self.net.streams.drain(..).flatten().collect();
        for mut os in open {
            let end = os.s.cancel(false);
            let _ = self.grpc_ended(&os, end, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_keyed_by_its_server_and_its_own_tls() {
        let mut c = ScriptGrpcCall {
            target: "127.0.0.1:50051".into(),
            plaintext: true,
            ..ScriptGrpcCall::default()
        };
        assert_eq!(key_of(&c), "http://127.0.0.1:50051");
        c.plaintext = false;
        let plain_tls = key_of(&c);
        assert_eq!(plain_tls, "https://127.0.0.1:50051");
        c.tls = Some(ScriptGrpcTls {
            cacerts: vec!["A".into()],
            ..ScriptGrpcTls::default()
        });
        let a = key_of(&c);
        c.tls = Some(ScriptGrpcTls {
            cacerts: vec!["B".into()],
            ..ScriptGrpcTls::default()
        });
        assert_ne!(a, key_of(&c));
        assert_ne!(a, plain_tls);
        // The key's text never shows in the key.
        c.tls = Some(ScriptGrpcTls {
            key: "SECRET-KEY".into(),
            ..ScriptGrpcTls::default()
        });
        assert!(!key_of(&c).contains("SECRET"));
        assert!(!format!("{:?}", c.tls).contains("SECRET"));
    }
}

//! Which connection an HTTP request goes on, and what its exchange keeps: the
//! VU's own HTTP/1.1 connection to the origin ([`conn_slot`]; the step awaits that
//! exchange itself, [`super::http`]), or the worker's shared HTTP/2 pool for an
//! origin that speaks it ([`Vu::send_h2`], falling back to the VU's HTTP/1.1
//! connection when the server chooses HTTP/1.1). What the answer leaves behind
//! (body, head, a failed answer's first bytes) goes to the VU's reused
//! [`ResponseBufs`]; its figures to the VU's one `Exchange`, read in place.

use pado_http::{exchange_h2_into, exchange_into, Conn, H2Pool, Origin, RequestRef, UseHttp1};
use pado_metrics::raw::RawProtocol;
use pado_metrics::NewConnection;

use crate::plan::{RequestForm, RequestPlan};
use crate::runtime::worker::WorkerCtx;

use super::redirects::ExtraOrigin;
use super::Vu;

/// The VU's buffers for what an answer leaves behind, reused request after request.
pub(super) struct ResponseBufs {
    /// Kept response body (a gRPC reply as JSON).
    pub(super) body: Vec<u8>,
    /// Kept response head.
    pub(super) head: Vec<u8>,
    /// First bytes of a failed response's body when the body is not kept anyway
    /// (filled only for failures; emptied after each).
    pub(super) fail_body: Vec<u8>,
    /// Decodes gzip, br, zstd and deflate responses (touched only by those).
    pub(super) decoder: pado_http::decode::BodyDecoder,
    /// Reads `sse:` steps' event streams (touched only by those).
    pub(super) sse: super::sse::SseRead,
}

impl ResponseBufs {
    /// Empty buffers; bodies decoded up to `max_body`.
    pub(super) fn new(max_body: usize) -> Self {
        ResponseBufs {
            body: Vec::new(),
            head: Vec::new(),
            fail_body: Vec::new(),
            decoder: pado_http::decode::BodyDecoder::for_max_body(max_body),
            sse: Default::default(),
        }
    }
}

/// One HTTP request to send: its bytes and what to keep of its answer.
#[derive(Clone, Copy)]
pub(super) struct Outgoing<'a> {
    /// Request line, headers and body.
    pub(super) bytes: &'a [u8],
    /// A HEAD request (its answer has no body).
    pub(super) is_head: bool,
    /// May be sent again on a fresh connection (idempotent).
    pub(super) resend_safe: bool,
    /// Keep the body (checks, extraction or a trace read it).
    pub(super) keep_body: bool,
    /// Copy the head when it sets cookies or redirects.
    pub(super) want_head: bool,
    /// Copy the head whatever it says (header checks, extraction, a trace).
    pub(super) keep_head_always: bool,
}

impl ResponseBufs {
    /// What the exchange of `out` keeps of its answer, and where.
    #[inline]
    pub(super) fn request_ref<'a>(
        &'a mut self,
        req: &'a RequestPlan,
        out: Outgoing<'a>,
        max_body: usize,
    ) -> RequestRef<'a> {
        RequestRef {
            bytes: out.bytes,
            is_head: out.is_head,
            resend_safe: out.resend_safe,
            timeout: req.timeout,
            keep_body: out.keep_body.then_some((&mut self.body, max_body)),
            keep_head: out
                .want_head
                .then_some((&mut self.head, out.keep_head_always)),
            failed_prefix: Some((&mut self.fail_body, &req.expect)),
            decoder: Some(&mut self.decoder),
            sse: req.sse.as_ref().map(|plan| {
                self.sse.tally.begin(plan);
                pado_http::sse::SseStream {
                    parser: &mut self.sse.parser,
                    handler: &mut self.sse.tally,
                    max_time: plan.max_time,
                    // A load worker's VUs run inside its `LocalSet`.
                    own_task: true,
                }
            }),
        }
    }
}

/// The VU's own HTTP/1.1 connection to host `host`: one of the plan's origins
/// (`conns`, one per origin), or past them an origin met in a redirect (`extra`).
/// Over fields, not `&mut Vu`, so the answer's buffers stay free to borrow.
#[inline]
pub(super) fn conn_slot<'v>(
    conns: &'v mut [Option<Conn>],
    extra: &'v mut [ExtraOrigin],
    host: usize,
) -> &'v mut Option<Conn> {
    match host.checked_sub(conns.len()) {
        None => &mut conns[host],
        Some(k) => &mut extra[k].conn,
    }
}

impl Vu {
    /// Send `out` to host `host` (one of the plan's origins that speaks HTTP/2,
    /// `origin`) on the worker's shared `pool`, or on the VU's own connection when
    /// the server chose HTTP/1.1: the exchange written into [`Vu::ex`] (read there
    /// by the finish path), and the protocol it went in. `hops` counts the
    /// redirects before it. (HTTP/1.1 origins are sent to by the caller itself, so
    /// that path goes through no further future.)
    pub(super) async fn send_h2(
        &mut self,
        ctx: &WorkerCtx,
        (req, out): (&RequestPlan, Outgoing<'_>),
        (origin, pool): (&Origin, &H2Pool),
        (host, hops): (usize, u32),
    ) -> RawProtocol {
        let max_body = ctx.plan.max_body;
        // The plan's HTTP/2 form, when what is sent is the plan's static request.
        let prebuilt = req.h2.as_ref().filter(|_| {
            hops == 0
                && matches!(&req.form, RequestForm::Static { bytes: b, .. }
                    if std::ptr::eq(b.as_ptr(), out.bytes.as_ptr()))
        });
        let h2 = self.resp.request_ref(req, out, max_body);
        let ex = &mut self.ex;
        match exchange_h2_into(pool, origin, h2, prebuilt, ex).await {
            Ok(()) => RawProtocol::Http2,
            Err(UseHttp1(opened)) => {
                let slot = conn_slot(&mut self.conns, &mut self.extra, host);
                let setup = opened.as_ref().map(|(_, t)| *t);
                if let Some((c, _)) = opened {
                    *slot = Some(c);
                }
                let h1 = self.resp.request_ref(req, out, max_body);
                exchange_into(slot, origin, h1, ex).await;
                if let Some(t) = setup {
                    ex.setup.dns += t.dns;
                    ex.setup.connecting += t.connecting;
                    ex.setup.tls += t.tls;
                    // The pool opened it for this request, which the server chose
                    // to answer in HTTP/1.1.
                    ex.opened = NewConnection::opened(origin.tls.is_some());
                }
                RawProtocol::Http1
            }
        }
    }
}

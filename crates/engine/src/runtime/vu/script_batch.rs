//! A script's HTTP requests on pado's clients: one request ([`run_lane`], what
//! `http.get` and the others send) and k6's `http.batch` ([`Vu::script_batch`]):
//! its requests go out at once, each on a connection of its own (the first to a
//! host on the VU's own, the others on new ones), at most `batch` at a time and
//! `batchPerHost` to one host, as k6 sends them; the VU's task waits for all
//! (the worker runs other VUs meanwhile) and answers in the batch's order. An
//! https origin that offers HTTP/2 (ALPN) gets it, on the VU's HTTP/2
//! connection to it, as k6's client does; one that does not gets HTTP/1.1.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use pado_http::{
    exchange_h2_into, exchange_into, is_redirect, Conn, Exchange, H2Pool, Origin, Protocol,
    RequestRef, StatusSet, UseHttp1,
};
use pado_metrics::NewConnection;
use tokio::sync::Semaphore;

use crate::cookies::ScriptJar;
use crate::response_view::ResponseView;
use crate::runtime::worker::WorkerCtx;
use crate::script::{ScriptBatch, ScriptBatchReply, ScriptRequest, ScriptResponse};

use super::finish::{ended_at, sample_of};
use super::redirects::{host_for_with, origin_key, resolve_origin};
use super::script::{script_bytes, script_failure, script_response, unsendable};
use super::script_debug::script_trace;
use super::send::{conn_slot, ResponseBufs};
use super::{Vu, MAX_REDIRECTS};

/// k6's default request timeout.
const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Where one request of a script goes out: its connection (taken from the
/// VU's, given back after), the VU's HTTP/2 connections to its origin, and
/// the buffers its bytes and answer use.
pub(super) struct Lane<'a> {
    /// The HTTP/1.1 connection the request goes on (`None`: a new one).
    pub(super) conn: Option<Conn>,
    /// The first origin's connection, set aside while a redirect is on another.
    home: Option<Conn>,
    /// The VU's HTTP/2 connections to the first origin (an https origin).
    pub(super) h2: Option<Rc<H2Pool>>,
    /// The request's bytes.
    pub(super) req: &'a mut Vec<u8>,
    /// What the answer leaves behind.
    pub(super) resp: &'a mut ResponseBufs,
    /// The exchange's figures.
    ex: Exchange,
}

impl<'a> Lane<'a> {
    /// A lane over these buffers, starting on `conn`.
    pub(super) fn new(
        conn: Option<Conn>,
        h2: Option<Rc<H2Pool>>,
        (req, resp): (&'a mut Vec<u8>, &'a mut ResponseBufs),
    ) -> Self {
        Lane {
            conn,
            home: None,
            h2,
            req,
            resp,
            ex: Exchange::default(),
        }
    }

    /// The connection to the first origin, to give back to the VU.
    pub(super) fn into_home(self, at_home: bool) -> Option<Conn> {
        if at_home {
            self.conn
        } else {
            self.home
        }
    }
}

/// Most connections a VU keeps beside its one per host, for its next batch (k6's
/// client keeps a batch's connections open too).
const MAX_SPARE: usize = 32;

/// What a VU keeps for its batches: each lane's buffers, reused, and the
/// connections a batch opened beyond the VU's one per host (by origin), for
/// the next batch to the same hosts.
#[derive(Default)]
pub(super) struct LaneBufs {
    bufs: Vec<(Vec<u8>, ResponseBufs)>,
    spare: Vec<(String, Conn)>,
}

impl LaneBufs {
    /// Close the kept connections (an interrupted exchange may have left one
    /// mid-message).
    pub(super) fn drop_connections(&mut self) {
        self.spare.clear();
    }

    /// A kept connection to `origin`, if there is one.
    fn spare_for(&mut self, origin: &Origin) -> Option<Conn> {
        let i = self.spare.iter().position(|(o, _)| *o == origin.label)?;
        Some(self.spare.swap_remove(i).1)
    }
}

/// A request of VU `vu` (in `scope`: a scenario, `setup`, `teardown`) sent on
/// `lane`, first to `origin` at `url`, its redirects followed (each hop a
/// sample of its own); `jar` gives and keeps its cookies. The script's view of
/// the final answer, and whether it ended on the first origin.
pub(super) async fn run_lane(
    ctx: &WorkerCtx,
    (vu, scope): (u64, &str),
    lane: &mut Lane<'_>,
    req: &ScriptRequest,
    (first, mut url): (Rc<Origin>, url::Url),
    jar: &RefCell<ScriptJar>,
    mut scheduled: Option<Instant>,
) -> (ScriptResponse, bool) {
    let series = ctx.script_series(
        req.name.as_deref().unwrap_or(&req.url),
        req.group.as_deref(),
        &req.tags,
    );
    let expected = StatusSet(req.expected.clone().unwrap_or_else(|| vec![(200, 399)]));
    let max_hops = req.redirects.unwrap_or(MAX_REDIRECTS);
    let mut method = req.method.to_ascii_uppercase();
    let mut body: &[u8] = &req.body;
    let mut hops = 0u32;
    let mut origin = first.clone();
    let mut at_home = true;
    let mut h2 = lane.h2.clone();
    loop {
        let t_start = Instant::now();
        script_bytes(lane.req, (&method, &url), &req.headers, body, |out| {
            jar.borrow().write_header_for(&url, &req.cookies, out);
        });
        let is_head = method == "HEAD";
        lane.resp.body.clear();
        lane.resp.head.clear();
        send(
            lane,
            (&origin, h2.as_deref()),
            (is_head, &method, req.timeout, req.keep_body),
            ctx.plan.max_body,
        )
        .await;
        let ex = &lane.ex;
        let sched = scheduled.take();
        let (end, duration) = ended_at(ex, sched, t_start);
        let mut sample = sample_of(ex, ex.error, (sched, t_start), duration);
        let view = ResponseView::new(ex.status, &lane.resp.head, &lane.resp.body);
        if ex.error.is_none() {
            jar.borrow_mut()
                .absorb_url(&url, view.headers("set-cookie"));
        }
        let location = view
            .header("location")
            .map(|l| String::from_utf8_lossy(l).into_owned());
        let next = location
            .filter(|_| ex.error.is_none() && is_redirect(ex.status) && hops < max_hops)
            .and_then(|l| url.join(&l).ok());
        let name = req.name.as_deref().unwrap_or(&req.url);
        let origin_label = url[..url::Position::BeforePath].to_string();
        if let Some(next) = next {
            // A hop: measured under the request's series, never a failure.
            ctx.record(series, &sample, end);
            if ctx.observer.is_some() {
                let bufs = (&lane.req[..], &lane.resp.head[..], &lane.resp.body[..]);
                script_trace(ctx, (vu, scope, name), &origin_label, &sample, bufs);
            }
            if matches!(ex.status, 301..=303) && method != "HEAD" {
                method = "GET".to_string();
                body = &[];
            }
            if origin_key(&next) != origin_key(&url) {
                // Another origin: its own connection; the first one's set aside.
                let home = origin_key(&next) == (origin_of(&first), first.host.clone(), first.port);
                if at_home {
                    lane.home = lane.conn.take();
                }
                if home {
                    lane.conn = lane.home.take();
                    origin = first.clone();
                    h2 = lane.h2.clone();
                } else {
                    lane.conn = None;
                    let Some(o) = resolve_origin(&ctx.plan, &next, Protocol::Auto).await else {
                        return (
                            unsendable(next.as_str(), "no connection can be made to this host"),
                            false,
                        );
                    };
                    h2 = o
                        .protocol
                        .pooled(o.tls.is_some())
                        .then(|| Rc::new(H2Pool::new(ctx.plan.max_streams)));
                    origin = Rc::new(o);
                }
                at_home = home;
            }
            url = next;
            hops += 1;
            continue;
        }
        let failed = ex.error.is_some() || !expected.contains(ex.status);
        sample.failed = failed;
        if failed {
            let bufs = (&lane.req[..], &lane.resp.body[..]);
            script_failure(ctx, (scope, series), (&method, &url), &sample, end, bufs);
        }
        ctx.record(series, &sample, end);
        if ctx.observer.is_some() {
            let bufs = (&lane.req[..], &lane.resp.head[..], &lane.resp.body[..]);
            script_trace(ctx, (vu, scope, name), &origin_label, &sample, bufs);
        }
        return (script_response(&url, ex, &sample, lane.resp), at_home);
    }
}

/// Whether an origin is https (as [`origin_key`] gives it).
fn origin_of(o: &Origin) -> bool {
    o.tls.is_some()
}

/// One exchange of the lane's request (in `lane.req`) with `origin`: over
/// HTTP/2 on `h2` when the origin offers it, else on the lane's HTTP/1.1
/// connection; its figures into `lane.ex`.
async fn send(
    lane: &mut Lane<'_>,
    (origin, h2): (&Origin, Option<&H2Pool>),
    (is_head, method, timeout, keep_body): (bool, &str, Option<std::time::Duration>, bool),
    max_body: usize,
) {
    let resend_safe = matches!(method, "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE");
    let timeout = timeout.unwrap_or(DEFAULT_TIMEOUT);
    let resp = &mut *lane.resp;
    let how = (is_head, resend_safe, keep_body);
    if let Some(pool) = h2 {
        let r = request_ref(resp, lane.req, how, timeout, max_body);
        match exchange_h2_into(pool, origin, r, None, &mut lane.ex).await {
            Ok(()) => return,
            Err(UseHttp1(opened)) => {
                let setup = opened.as_ref().map(|(_, t)| *t);
                if let Some((c, _)) = opened {
                    lane.conn = Some(c);
                }
                resp.body.clear();
                resp.head.clear();
                let r = request_ref(resp, lane.req, how, timeout, max_body);
                exchange_into(&mut lane.conn, origin, r, &mut lane.ex).await;
                if let Some(t) = setup {
                    let ex = &mut lane.ex;
                    ex.setup.dns += t.dns;
                    ex.setup.connecting += t.connecting;
                    ex.setup.tls += t.tls;
                    ex.opened = NewConnection::opened(origin.tls.is_some());
                }
                return;
            }
        }
    }
    let r = request_ref(resp, lane.req, how, timeout, max_body);
    exchange_into(&mut lane.conn, origin, r, &mut lane.ex).await;
}

/// What an exchange of `bytes` keeps of its answer (head always, body unless
/// the script said `responseType: "none"`), in `resp`.
fn request_ref<'r>(
    resp: &'r mut ResponseBufs,
    bytes: &'r [u8],
    (is_head, resend_safe, keep_body): (bool, bool, bool),
    timeout: std::time::Duration,
    max_body: usize,
) -> RequestRef<'r> {
    RequestRef {
        bytes,
        is_head,
        resend_safe,
        timeout,
        keep_body: keep_body.then_some((&mut resp.body, max_body)),
        keep_head: Some((&mut resp.head, true)),
        failed_prefix: None,
        decoder: Some(&mut resp.decoder),
        sse: None,
    }
}

impl Vu {
    /// The origin of `url` for a script's request: its host id (one of the
    /// VU's), origin and HTTP/2 connections; `None` when it cannot have one.
    pub(super) async fn script_origin(
        &mut self,
        url: &url::Url,
    ) -> Option<(usize, Rc<Origin>, Option<Rc<H2Pool>>)> {
        let host = host_for_with(
            &self.ctx.plan,
            (&mut self.extra, &mut self.extra_next),
            &mut self.jar,
            url,
            Protocol::Auto,
        )
        .await?;
        let n = self.ctx.plan.origins.len();
        Some(match host.checked_sub(n) {
            None => (host, Rc::new(self.ctx.plan.origins[host].clone()), None),
            Some(k) => (host, self.extra[k].origin.clone(), self.extra[k].h2.clone()),
        })
    }

    /// k6's `http.batch`: the batch's requests at once (see the module's
    /// words), answered in its order with its jars back.
    pub(super) async fn script_batch(
        &mut self,
        scope: &str,
        batch: ScriptBatch,
        scheduled: Option<Instant>,
    ) -> ScriptBatchReply {
        let ctx = self.ctx.clone();
        let ScriptBatch {
            requests,
            jars,
            jar_of,
            parallel,
            per_host,
        } = batch;
        let n = requests.len();
        // Each request's first origin, found one after another (the VU's table
        // of hosts) before any is sent.
        let mut firsts = Vec::with_capacity(n);
        for r in &requests {
            let found = match self.ctx.script_url(&r.url) {
                Some(u) => self.script_origin(&u).await.map(|o| (o, u)),
                None => None,
            };
            firsts.push(found);
        }
        // The first request to each host takes the VU's connection to it, the
        // others one the VU kept from an earlier batch, or a new one.
        let mut homes: Vec<usize> = Vec::new();
        let mut conns: Vec<Option<Conn>> = Vec::with_capacity(n);
        for f in &firsts {
            conns.push(match f {
                Some(((host, _, _), _)) if !homes.contains(host) => {
                    homes.push(*host);
                    conn_slot(&mut self.conns, &mut self.extra, *host).take()
                }
                Some(((_, origin, _), _)) => self.batch_bufs.spare_for(origin),
                None => None,
            });
        }
        if self.batch_bufs.bufs.len() < n {
            let max_body = ctx.plan.max_body;
            self.batch_bufs
                .bufs
                .resize_with(n, || (Vec::new(), ResponseBufs::new(max_body)));
        }
        let jars: Vec<RefCell<ScriptJar>> = jars.into_iter().map(RefCell::new).collect();
        let spare = RefCell::new(ScriptJar::default());
        let all = Semaphore::new(if parallel == 0 { n.max(1) } else { parallel });
        let hosts: Vec<(usize, Semaphore)> = homes
            .iter()
            .map(|h| {
                (
                    *h,
                    Semaphore::new(if per_host == 0 { n.max(1) } else { per_host }),
                )
            })
            .collect();
        let vu = self.id;
        let runs = self
            .batch_bufs
            .bufs
            .iter_mut()
            .zip(requests.iter().zip(firsts).zip(conns))
            .enumerate()
            .map(|(i, ((req_buf, resp), ((req, first), conn)))| {
                let jar = jar_of.get(i).and_then(|j| jars.get(*j)).unwrap_or(&spare);
                let (ctx, all, hosts) = (&ctx, &all, &hosts);
                async move {
                    let Some(((host, origin, h2), url)) = first else {
                        return (unsendable(&req.url, "invalid URL or host"), None);
                    };
                    let _all = all.acquire().await;
                    let per = hosts.iter().find(|(h, _)| *h == host).map(|(_, s)| s);
                    let _per = match per {
                        Some(s) => Some(s.acquire().await),
                        None => None,
                    };
                    let origin_label = origin.label.clone();
                    let mut lane = Lane::new(conn, h2, (req_buf, resp));
                    let (r, at_home) = run_lane(
                        ctx,
                        (vu, scope),
                        &mut lane,
                        req,
                        (origin, url),
                        jar,
                        scheduled,
                    )
                    .await;
                    (r, Some((host, origin_label, lane.into_home(at_home))))
                }
            });
        let done = futures_util::future::join_all(runs).await;
        let mut responses = Vec::with_capacity(n);
        for (r, back) in done {
            // A connection goes back to the VU where it has none, else among
            // those kept for the next batch (beyond that many, it closes).
            if let Some((host, label, Some(c))) = back {
                let slot = conn_slot(&mut self.conns, &mut self.extra, host);
                if slot.is_none() {
                    *slot = Some(c);
                } else if self.batch_bufs.spare.len() < MAX_SPARE {
                    self.batch_bufs.spare.push((label, c));
                }
            }
            responses.push(r);
        }
        ScriptBatchReply {
            responses,
            jars: jars.into_iter().map(RefCell::into_inner).collect(),
        }
    }
}

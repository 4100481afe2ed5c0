//! The dashboard's HTTP server: one thread with a current-thread runtime, every
//! request's head judged ([`crate::access`]) before its body is read, every wait
//! bounded, the routes of `docs/dashboard.md`; a refused request's connection is
//! closed by [`pado_h1server::lingering_close`], so a body sent anyway does not
//! reset the refusal away. Streams (`/api/stream`) are
//! written from the store by their own task: a slow reader only slows itself.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pado_fleet::access::Token;
use pado_h1server::{
    lingering_close, read_request_gated, Gate, Gated, Patience, ReadError, Request, Unread, LINGER,
};
use pado_session::LiveRun;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use crate::access::{self, Refusal, MAX_CONTROL_BODY};
use crate::baseline::Baseline;
use crate::info::RunInfo;
use crate::store::{Store, MAX_SECONDS};

/// How long a connection may keep the server waiting for a request.
const PATIENCE: Patience = Patience {
    head: Duration::from_secs(15),
    body_stall: Duration::from_secs(5),
};

/// How long one write to a client may take before the connection is closed.
const WRITE_PATIENCE: Duration = Duration::from_secs(10);

/// What the run left when it ended.
pub(crate) struct Ended {
    pub(crate) dir: std::path::PathBuf,
    pub(crate) summary: serde_json::Value,
    pub(crate) files: Vec<String>,
}

/// What the server's connections share.
pub(crate) struct Shared {
    pub(crate) run: Arc<dyn LiveRun>,
    pub(crate) info: RunInfo,
    pub(crate) token: Token,
    pub(crate) baseline: Option<Baseline>,
    pub(crate) addr: SocketAddr,
    /// Names `Host` may give besides IP addresses and `localhost`.
    pub(crate) host_names: Vec<String>,
    pub(crate) started_at: String,
    pub(crate) store: Mutex<Store>,
    pub(crate) end: Mutex<Option<Ended>>,
    /// The live bottleneck hint, once [`crate::hint`] has read one, and whether
    /// it was read over the whole run (after its end).
    pub(crate) hint: Mutex<Option<(pado_analysis::attribution::live::LiveHint, bool)>>,
    pub(crate) changes: tokio::sync::watch::Sender<u64>,
    pub(crate) streams: AtomicUsize,
}

impl Shared {
    pub(crate) fn new(
        run: Arc<dyn LiveRun>,
        info: RunInfo,
        token: Token,
        baseline: Option<Baseline>,
        addr: SocketAddr,
    ) -> Shared {
        Shared {
            store: Mutex::new(Store::new(MAX_SECONDS, &info)),
            run,
            info,
            token,
            baseline,
            addr,
            host_names: if addr.ip().is_loopback() {
                Vec::new()
            } else {
                own_host_name().into_iter().collect()
            },
            started_at: pado_base::stamp::utc_ms(std::time::SystemTime::now()),
            end: Mutex::new(None),
            hint: Mutex::new(None),
            changes: tokio::sync::watch::channel(0).0,
            streams: AtomicUsize::new(0),
        }
    }

    /// Something new to show: wake the streams.
    pub(crate) fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// The run's length as its result says it (`summary.json`'s `duration_s`),
    /// once it has ended.
    pub(crate) fn run_duration(&self) -> Option<f64> {
        let end = pado_base::lock(&self.end);
        end.as_ref()?.summary.get("duration_s")?.as_f64()
    }

    /// The run ended, its directory written at `dir`.
    pub(crate) fn finished(&self, dir: &Path) {
        let summary = std::fs::read(dir.join("summary.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .unwrap_or(serde_json::Value::Null);
        let failures = pado_results::ResultDir::open(dir)
            .and_then(|d| d.read_failures())
            .unwrap_or_default();
        {
            let mut store = pado_base::lock(&self.store);
            store.replace_samples(&failures);
            if let Some(list) = summary.get("thresholds").and_then(|t| t.as_array()) {
                store.set_thresholds(crate::store::thresholds_of_summary(list));
            }
        }
        *pado_base::lock(&self.end) = Some(Ended {
            dir: dir.to_path_buf(),
            files: crate::files::list(dir),
            summary,
        });
        self.changed();
    }
}

/// This machine's host name (Linux), by which other machines may open the page.
fn own_host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// An answer with its whole body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Body,
}

/// A body in memory, or a file of the result directory streamed from disk.
pub(crate) enum Body {
    Bytes(Vec<u8>),
    Static(&'static [u8]),
    File(std::path::PathBuf, u64),
    /// `/api/stream`: Server-Sent Events from this second on.
    Stream(u32),
}

impl Answer {
    pub(crate) fn json_value(status: u16, v: &serde_json::Value) -> Answer {
        Answer::json_text(status, v.to_string())
    }

    pub(crate) fn json_text(status: u16, text: String) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            headers: vec![("Cache-Control", "no-store".into())],
            body: Body::Bytes(text.into_bytes()),
        }
    }

    pub(crate) fn error_text(status: u16, why: impl Into<String>) -> Answer {
        Answer::json_value(status, &json!({ "error": why.into() }))
    }
}

/// Serve `listener` on a thread of its own until the returned handle is dropped.
pub(crate) fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
) -> std::io::Result<pado_h1server::ServerThread> {
    pado_h1server::ServerThread::serve_listener("pado-dashboard", listener, move |stream, _| {
        let shared = shared.clone();
        async move { connection(stream, &shared).await }
    })
}

/// The head's verdict: refused, or read with this body limit.
fn gate(req: &Request, s: &Shared) -> Gate<Refusal> {
    if let Err(r) = access::host_ok(req, &s.host_names) {
        return Gate::Refuse(r);
    }
    match (req.method.as_str(), req.path.as_str()) {
        ("POST", "/api/control") => match access::control_ok(req, &s.token) {
            Ok(()) => Gate::Read {
                max_body: MAX_CONTROL_BODY,
            },
            Err(r) => Gate::Refuse(r),
        },
        ("GET" | "HEAD", _) => Gate::Read { max_body: 0 },
        _ => Gate::Refuse(Refusal {
            status: 405,
            reason: format!(
                "{} {}: not an endpoint of the dashboard",
                req.method, req.path
            ),
        }),
    }
}

/// The requests of one connection, until it ends, is refused or goes quiet.
async fn connection<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, s: &Shared) {
    let mut buf = Vec::new();
    loop {
        let read = read_request_gated(&mut stream, &mut buf, &PATIENCE, |req| gate(req, s)).await;
        let (req, a) = match read {
            Ok(Some(Gated::Read(req))) => {
                let a = crate::routes::answer(&req, s);
                (req, a)
            }
            Ok(Some(Gated::Refused(req, r))) => {
                // The body stays unread; one sent anyway must not reset the answer.
                let unread = Unread::after(&req, buf.len());
                let a = Answer::error_text(r.status, r.reason);
                if write_answer(&mut stream, a, false, req.version, req.is_head()).await {
                    lingering_close(stream, unread, &LINGER).await;
                }
                return;
            }
            Err(ReadError::Malformed(status, why)) => {
                let a = Answer::error_text(status, why);
                if write_answer(&mut stream, a, false, 1, false).await {
                    lingering_close(stream, Unread::Unknown, &LINGER).await;
                }
                return;
            }
            Ok(None) | Err(ReadError::Io) => return,
        };
        let keep = req.keep_alive;
        if matches!(a.body, Body::Stream(_)) && !req.is_head() {
            crate::stream::stream_events(&mut stream, a, s).await;
            return;
        }
        let ok = write_answer(&mut stream, a, keep, req.version, req.is_head()).await;
        if !ok || !keep {
            return;
        }
    }
}

/// Writes `a` within [`WRITE_PATIENCE`] per write; false when that failed.
pub(crate) async fn write_answer<S: AsyncWrite + Unpin>(
    stream: &mut S,
    a: Answer,
    keep: bool,
    version: u8,
    head_only: bool,
) -> bool {
    let len = match &a.body {
        Body::Bytes(b) => b.len() as u64,
        Body::Static(b) => b.len() as u64,
        Body::File(_, n) => *n,
        Body::Stream(_) => 0,
    };
    let mut head = head_of(&a);
    head.content_length(len)
        .connection(pado_h1server::connection_value(keep, version));
    let head = head.finish();
    if !bounded(stream.write_all(&head)).await {
        return false;
    }
    if head_only {
        return bounded(stream.flush()).await;
    }
    match a.body {
        Body::Bytes(b) => bounded(stream.write_all(&b)).await && bounded(stream.flush()).await,
        Body::Static(b) => bounded(stream.write_all(b)).await && bounded(stream.flush()).await,
        Body::File(path, n) => send_file(stream, &path, n).await,
        Body::Stream(_) => false,
    }
}

/// The status line and headers every answer has.
pub(crate) fn head_of(a: &Answer) -> pado_h1server::Head {
    let mut head = pado_h1server::Head::new(a.status);
    head.header("Content-Type", a.content_type)
        .header("X-Content-Type-Options", "nosniff")
        .header("Referrer-Policy", "no-referrer");
    for (k, v) in &a.headers {
        head.header(k, v);
    }
    head
}

/// A write that gives up after [`WRITE_PATIENCE`].
pub(crate) async fn bounded<F: std::future::Future<Output = std::io::Result<()>>>(f: F) -> bool {
    matches!(tokio::time::timeout(WRITE_PATIENCE, f).await, Ok(Ok(())))
}

/// A result file, `n` bytes, in pieces (a raw request file may be large).
async fn send_file<S: AsyncWrite + Unpin>(stream: &mut S, path: &Path, n: u64) -> bool {
    use std::io::Read;
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut f = f.take(n);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut sent = 0u64;
    while sent < n {
        let got = match f.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(k) => k,
        };
        if !bounded(stream.write_all(&chunk[..got])).await {
            return false;
        }
        sent += got as u64;
    }
    bounded(stream.flush()).await
}

#[cfg(test)]
mod tests;

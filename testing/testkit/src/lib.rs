//! A local HTTP/1.1 server for pado's end-to-end tests and demos.
//!
//! The tests run the real `pado` binary against this server and compare what
//! pado reports with what the server knows to be true: the server counts
//! every request it receives ([`Stats`], [`RequestRecord`]) and delays,
//! stalls, resets or misbehaves exactly as the request path asks (see the
//! routes below). Counting is exact — a request is counted as soon as its
//! head and body have been read, before its route runs — and delays are
//! measured from that same moment.
//!
//! The server always listens on `127.0.0.1` and runs on a background thread
//! with its own tokio runtime, so it works the same from plain `#[test]`s,
//! async tests and the `pado-testserver` binary.
//!
//! # Routes
//!
//! | path | behaviour |
//! |---|---|
//! | `/`, anything unknown | `200`, `ok\n` |
//! | `/delay/{ms}` | `200 ok` exactly `ms` ms after the request was read |
//! | `/status/{code}` | that status (1xx become 200), body `status {code}\n` (none for 204/304) |
//! | `/stall[?period_ms=&stall_ms=]` | `200 ok`, but held to the end of the window `[period-len, period)` of every period since start |
//! | `/slowing?base_ms=&per_s_ms=` | `200 ok` after `base_ms + per_s_ms × seconds since server start` ms: latency growing at a known rate |
//! | `/reset` | TCP reset (SO_LINGER 0), no response |
//! | `/garbage` | `this is not http\r\n\r\n`, then close |
//! | `/close` | `200 ok` with `Connection: close`, then close |
//! | `/close-silently` | `200 ok` without `Connection: close` (keep-alive implied), then close |
//! | `/chunked?chunks=N&size=M[&gap_ms=G]` | chunked body, N chunks of M `x`, each its own write+flush (default 3×10) |
//! | `/sse?tokens=N&first_ms=T0&gap_ms=D[&usage=K][&cut=1][&id=X][&error=1]` | an OpenAI-style chat completion as Server-Sent Events: a role event at once (no token), token `i` (Hangul text) at `T0 + i×D` ms after the request was read, then `usage` with `completion_tokens: K` if asked, then an `event: error` if `error=1`, then `[DONE]`; `cut=1` ends with half an event and a close instead; `id=X` puts `"id":"X"` in every chunk |
//! | `/bytes/{n}[?end=TEXT]` | n-byte body (`a..z` repeated, ending in `TEXT` if given) in 64 KiB writes |
//! | `/hang` | never answers; waits for the client to close |
//! | `/reject-early` | `413` with `Connection: close` as soon as the head is in, the body never read; FIN, then RST 200 ms later (a client still writing its body gets a write error); counted with its head only |
//! | `/redirect/{n}` | `302` to `/redirect/{n-1}`; `/redirect/0` is `200 ok` (n hops, then the answer) |
//! | `/redirect-to?url=U[&status=S]` | status S (a 3xx, default 302) with `Location: U` exactly as given |
//! | `/echo` | the request body, with the request's Content-Type |
//! | `/encoded/{coding}?n=N[&chunked=1]` | [`encoded_body`] (`gzip`, `br`, `zstd`, `deflate`) with its `Content-Encoding`; `corrupt`: gzip's label on bytes that are not gzip; `bomb`: [`brotli_bomb`], labelled `br` |
//! | `/headers` | JSON object of request headers (lower-cased names) |
//! | `/continue` | `100 Continue`, then `200 ok` |
//! | `/nocontent` | `204`, no body, no Content-Length |
//! | `/notmodified` | `304` with `Content-Length: 50` and no body |
//! | `/eof-body` | `200`, body delimited by close |
//! | `/partial` | `200` with `Content-Length: 100`, 10 bytes, close |
//! | `/slow-body?ms=` | headers at once, body `ok\n` `ms` ms (default 100) after the request |
//! | `/json/login` | `200 {"token":"tok-<n>"}` |
//! | `/json/item` | `201 {"id":<n>}` |
//! | `/set-cookie?name=value...` | `200`, one `Set-Cookie` per query pair |
//! | `/metrics[?format=openmetrics]` | Prometheus text (or OpenMetrics) of what was counted: `testkit_requests_total` (scrapes excluded), `testkit_connections`, `testkit_scrapes_total` |
//!
//! HEAD gets the same headers as GET and no body. A malformed request gets
//! `400` and the connection is closed; nothing a client sends can stop the
//! server.

#![warn(missing_docs)]

use pado_base::lock;
use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod conn;
pub mod grpc;
pub mod h2server;
pub mod hostile;
pub mod proxy;
mod slots;
use pado_h1server as http;
pub use proxy::{ProxyOptions, ProxyServer, ProxyStats};
pub mod websocket;
pub use grpc::{client_pki, GrpcOptions, GrpcServer, GrpcStats, Reflection, ECHO_DESCRIPTOR_SET};
pub use websocket::WsServer;

#[cfg(test)]
mod tests;

/// The text `/encoded/{coding}?n=N` decodes to: `N` numbered lines and `end\n`.
pub fn decoded_text(n: usize) -> String {
    let mut t = String::new();
    for i in 0..n {
        t.push_str(&format!("line {i} of what pado should decode\n"));
    }
    t.push_str("end\n");
    t
}

/// [`decoded_text`]`(n)` encoded in `coding` (`gzip`, `br`, `zstd`, `deflate`), as
/// `/encoded/{coding}?n=N` sends it; `None` for another coding.
pub fn encoded_body(coding: &str, n: usize) -> Option<Vec<u8>> {
    use std::io::Write as _;
    let text = decoded_text(n);
    let data = text.as_bytes();
    Some(match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).ok()?;
            e.finish().ok()?
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).ok()?;
            e.finish().ok()?
        }
        "br" => {
            let mut out = Vec::new();
            let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            e.write_all(data).ok()?;
            drop(e);
            out
        }
        "zstd" => zstd::encode_all(data, 3).ok()?,
        _ => return None,
    })
}

/// A brotli decompression bomb: 64 MiB of zeros in a few KiB, made once per test
/// process (compressed a MiB at a time) and served by `/encoded/bomb`.
pub fn brotli_bomb() -> &'static [u8] {
    use std::io::Write as _;
    static BOMB: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BOMB.get_or_init(|| {
        let mut out = Vec::new();
        {
            let mut e = brotli::CompressorWriter::new(&mut out, 64 * 1024, 1, 22);
            let zeros = vec![0u8; 1 << 20];
            for _ in 0..64 {
                let _ = e.write_all(&zeros);
            }
        }
        out
    })
}

/// How to run a [`TestServer`]. Build with `..Default::default()` so that new
/// options do not break callers.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Serve HTTPS with a freshly generated self-signed certificate
    /// (see [`TestServer::cert_pem`]) instead of plain HTTP.
    pub tls: bool,
    /// Length of the `/stall` cycle, counted from server start (default 5 s).
    pub stall_period: Duration,
    /// Length of the stall window at the end of each cycle (default 1 s):
    /// `/stall` requests arriving in `[period - len, period)` are held until
    /// the window ends, which is what coordinated-omission tests need.
    pub stall_len: Duration,
    /// How many [`RequestRecord`]s to keep (default 200 000); later requests
    /// are still counted in [`Stats`] but not recorded, to bound memory
    /// under long load tests.
    pub record_limit: usize,
    /// With `tls`: require a client certificate signed by this CA (PEM), as a
    /// mutual-TLS service does; a client without one fails its handshake.
    pub client_ca_pem: Option<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            tls: false,
            stall_period: Duration::from_secs(5),
            stall_len: Duration::from_secs(1),
            record_limit: 200_000,
            client_ca_pem: None,
        }
    }
}

/// What the server has received, as counted by the server itself: the truth
/// pado's numbers are checked against.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests fully read (head and body), whatever happened afterwards.
    pub requests: u64,
    /// TCP connections accepted (counted at accept, before any TLS handshake).
    pub connections: u64,
    /// Connections per client address: one entry per host that connected, which
    /// tells generators in different network namespaces apart.
    pub connections_by_peer: BTreeMap<IpAddr, u64>,
    /// Requests per percent-decoded path, without the query.
    pub by_path: BTreeMap<String, u64>,
    /// Requests per method, as sent (`GET`, `POST`, ...).
    pub by_method: BTreeMap<String, u64>,
    /// Bytes of the counted requests as they were on the wire (head plus
    /// body, including chunked framing; after TLS decryption).
    pub bytes_received: u64,
    /// `/stall` requests that were answered late because they arrived in a
    /// stall window.
    pub stalled: u64,
    /// The latest a `/delay/N` answer came past its N ms, µs: this server's own
    /// timer lateness (a busy machine wakes it late), which a test comparing
    /// latencies of identical runs must allow for.
    pub delay_late_max_us: u64,
}

impl Stats {
    /// The stats as a JSON object (what `pado-testserver --stats` writes), so
    /// scripts and other languages can check them too.
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "requests": self.requests,
            "connections": self.connections,
            "by_path": self.by_path,
            "by_method": self.by_method,
            "bytes_received": self.bytes_received,
            "stalled": self.stalled,
            "delay_late_max_us": self.delay_late_max_us,
        })
        .to_string()
    }
}

/// One received request, kept so tests can check exactly what pado sent
/// (methods, headers, bodies, query encoding, connection reuse).
#[derive(Clone, Debug)]
pub struct RequestRecord {
    /// The method as sent.
    pub method: String,
    /// The raw request-target as sent, e.g. `/api/search?q=%EA%B2%80`.
    pub target: String,
    /// The percent-decoded path without query (UTF-8 lossy).
    pub path: String,
    /// The percent-decoded query pairs, in order (`+` decoded as a space).
    pub query: Vec<(String, String)>,
    /// The headers in order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked if it was sent chunked).
    pub body: Vec<u8>,
    /// Which connection carried it: equal ids mean the connection was reused.
    /// Ids start at 1 and are never reused, even after [`TestServer::reset_stats`].
    pub connection_id: u64,
    /// When the request had been fully read (the moment delays count from).
    pub received_at: Instant,
}

/// State shared by the server's tasks and the [`TestServer`] handle.
pub(crate) struct Shared {
    opts: ServerOptions,
    /// Server start: stall windows are counted from here.
    start: Instant,
    stats: Mutex<Stats>,
    records: Mutex<Vec<RequestRecord>>,
    next_conn_id: AtomicU64,
    login_counter: AtomicU64,
    item_counter: AtomicU64,
    /// `/slots`: the route of known capacity and its knob.
    pub(crate) slots: slots::Slots,
}

impl Shared {
    /// Notes that a `/delay` answer came `late` past its time.
    pub(crate) fn delay_late(&self, late: Duration) {
        let mut stats = lock(&self.stats);
        stats.delay_late_max_us = stats.delay_late_max_us.max(late.as_micros() as u64);
    }

    /// A copy of the counters (for the `/metrics` route).
    pub(crate) fn stats_snapshot(&self) -> Stats {
        lock(&self.stats).clone()
    }

    /// Counts and records one fully read request.
    fn count(&self, req: &http::Request, connection_id: u64, received_at: Instant) {
        // Stats and records are updated under both locks, so a snapshot never
        // sees one without the other.
        let mut stats = lock(&self.stats);
        let mut records = lock(&self.records);
        stats.requests += 1;
        *stats.by_path.entry(req.path.clone()).or_insert(0) += 1;
        *stats.by_method.entry(req.method.clone()).or_insert(0) += 1;
        stats.bytes_received += req.wire_len;
        if records.len() < self.opts.record_limit {
            records.push(RequestRecord {
                method: req.method.clone(),
                target: req.target.clone(),
                path: req.path.clone(),
                query: req.query.clone(),
                headers: req.headers.clone(),
                body: req.body.clone(),
                connection_id,
                received_at,
            });
        }
    }

    fn count_stalled(&self) {
        lock(&self.stats).stalled += 1;
    }

    fn count_connection(&self, peer: IpAddr) -> u64 {
        let mut stats = lock(&self.stats);
        stats.connections += 1;
        *stats.connections_by_peer.entry(peer).or_insert(0) += 1;
        drop(stats);
        self.next_conn_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// A running test server. Dropping it (or [`TestServer::shutdown`]) stops it.
pub struct TestServer {
    addr: SocketAddr,
    tls: bool,
    cert_pem: Option<String>,
    shared: Arc<Shared>,
    thread: Option<http::ServerThread>,
}

impl TestServer {
    /// Starts a plain-HTTP server on an ephemeral port of 127.0.0.1.
    ///
    /// # Panics
    /// If the server cannot start at all (no loopback, no threads); tests
    /// cannot go on without it. Use [`TestServer::try_start_on`] to handle that.
    pub fn start() -> TestServer {
        TestServer::start_with(ServerOptions::default())
    }

    /// Starts a server with these options on an ephemeral port of 127.0.0.1.
    ///
    /// # Panics
    /// Like [`TestServer::start`].
    pub fn start_with(opts: ServerOptions) -> TestServer {
        match TestServer::try_start_on(0, opts) {
            Ok(server) => server,
            Err(e) => panic!("pado-testkit: cannot start test server: {e}"),
        }
    }

    /// Starts a server on `127.0.0.1:port` (0 = any free port), reporting
    /// failures instead of panicking; what the `pado-testserver` binary uses.
    pub fn try_start_on(port: u16, opts: ServerOptions) -> io::Result<TestServer> {
        TestServer::try_start_at(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), opts)
    }

    /// Starts a server on `addr`: an address of an interface a test made itself
    /// (the end of a virtual link into a network namespace it created), so that
    /// generators in those namespaces reach it as separate hosts would.
    pub fn try_start_at(addr: SocketAddr, opts: ServerOptions) -> io::Result<TestServer> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (acceptor, cert_pem) = if opts.tls {
            let (acceptor, pem) = pado_h1server::tls::make_acceptor(opts.client_ca_pem.as_deref())?;
            (Some(acceptor), Some(pem))
        } else {
            (None, None)
        };
        let tls = opts.tls;
        let shared = Arc::new(Shared {
            opts,
            start: Instant::now(),
            stats: Mutex::new(Stats::default()),
            records: Mutex::new(Vec::new()),
            next_conn_id: AtomicU64::new(1),
            login_counter: AtomicU64::new(0),
            item_counter: AtomicU64::new(0),
            slots: slots::Slots::default(),
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("pado-testkit-worker")
            .build()?;
        let task_shared = Arc::clone(&shared);
        let thread = http::ServerThread::spawn("pado-testkit", move |stop| {
            runtime.block_on(accept_loop(listener, acceptor, task_shared, stop));
            // Dropping the runtime ends whatever is left (the connection tasks are
            // already dropped, hanging ones included).
            runtime.shutdown_timeout(Duration::from_secs(1));
        })?;
        Ok(TestServer {
            addr,
            tls,
            cert_pem,
            shared,
            thread: Some(thread),
        })
    }

    /// The address the server listens on (127.0.0.1 unless started with
    /// [`TestServer::try_start_at`]).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, or `https://...` with TLS; no trailing slash.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// [`TestServer::base_url`] followed by `path` (which should start with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// The self-signed certificate (PEM) when serving TLS, for clients to
    /// trust; its SANs are `localhost` and `127.0.0.1`.
    pub fn cert_pem(&self) -> Option<String> {
        self.cert_pem.clone()
    }

    /// Every setting of `/slots`' N made through `/slots/set`, in order: what an
    /// experiment applied and restored.
    pub fn slot_settings(&self) -> Vec<u64> {
        self.shared.slots.settings()
    }

    /// How long `/slots` really held a slot on average (the timer oversleeps a
    /// little): N over this is the capacity the route really had.
    pub fn slot_mean_hold(&self) -> Option<Duration> {
        self.shared.slots.mean_hold()
    }

    /// Sets `/slots`' N directly (as `/slots/set?n=N` does, recorded alike).
    pub fn set_slots(&self, n: u64) {
        let _ = self.shared.slots.set(n);
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let stats = lock(&self.shared.stats);
        stats.clone()
    }

    /// Every request received since start (or the last reset), in the order
    /// they were read, up to [`ServerOptions::record_limit`].
    pub fn records(&self) -> Vec<RequestRecord> {
        let _stats = lock(&self.shared.stats);
        lock(&self.shared.records).clone()
    }

    /// Zeroes the counters and forgets the records, so one server can serve
    /// several test phases. Connection ids keep counting up, the
    /// `/json/*` counters and the stall clock are not reset.
    pub fn reset_stats(&self) {
        let mut stats = lock(&self.shared.stats);
        let mut records = lock(&self.shared.records);
        *stats = Stats::default();
        records.clear();
    }

    /// Stops the server: stops accepting, closes every connection (even
    /// hanging ones) and waits for the server thread to end.
    pub fn shutdown(self) {
        drop(self);
    }

    /// Stops the server like [`TestServer::shutdown`] and returns the final
    /// stats: nothing can be counted after them.
    pub fn shutdown_with_stats(mut self) -> Stats {
        self.stop_and_join();
        self.stats()
    }

    fn stop_and_join(&mut self) {
        if let Some(thread) = self.thread.take() {
            thread.shutdown();
        }
    }
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("addr", &self.addr)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// Accepts connections until `stop` fires (or its handle is dropped), counting each
/// at accept (before any TLS handshake).
async fn accept_loop(
    listener: std::net::TcpListener,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    stop: http::ShutdownSignal,
) {
    let server = match http::Server::from_std(listener) {
        Ok(s) => s,
        Err(_) => return,
    };
    server
        .serve(stop, |stream, peer| {
            let conn_id = shared.count_connection(peer.ip());
            let shared = Arc::clone(&shared);
            let acceptor = acceptor.clone();
            async move {
                match acceptor {
                    None => conn::serve(stream, conn_id, shared).await,
                    Some(acceptor) => {
                        let handshake =
                            tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream));
                        if let Ok(Ok(tls)) = handshake.await {
                            conn::serve(tls, conn_id, shared).await;
                        }
                    }
                }
            }
        })
        .await;
}

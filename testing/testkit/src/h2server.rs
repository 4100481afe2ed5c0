//! A local HTTP/2 server for tests (the `h2` crate's server side), h2c with prior
//! knowledge or TLS with ALPN `h2` and a throw-away self-signed certificate. It
//! counts what the tests compare pado's figures with: requests answered,
//! connections, the most streams in flight at once on one connection, `GOAWAY`s
//! sent and streams reset.
//!
//! | path | behaviour |
//! |---|---|
//! | anything | `200`, `ok\n` |
//! | `/delay?ms=N` | `200 ok` N ms after the request's headers arrived |
//! | `/reset` | the stream is reset with `REFUSED_STREAM` (no response) |
//! | `/sse?tokens=N[&cut=1]` | an OpenAI-style chat completion as Server-Sent Events, one DATA frame per event: the role (no token), N tokens, `[DONE]`; `cut=1` ends the stream after half an event instead |
//! | `/encoded/{coding}?n=N` | [`crate::encoded_body`] with its `Content-Encoding`, in two DATA frames |
//! | any gRPC call (`content-type: application/grpc`) | a lying gRPC server: `200`, `application/grpc`, one empty message and the end of the stream, **without** `grpc-status` (no trailers); with the metadata `x-lie: head` only the head, ending the stream, again without `grpc-status` |
//!
//! With [`H2Options::goaway_after`] = N, the request after the N-th on a connection
//! is not answered: the server writes `GOAWAY` naming the N-th stream as the last it
//! processed (so the one in flight is refused) and closes the connection.

use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::net::TcpListener;

/// How to run an [`H2Server`].
#[derive(Clone, Debug, Default)]
pub struct H2Options {
    /// TLS with ALPN `h2` (a self-signed certificate) instead of h2c.
    pub tls: bool,
    /// `GOAWAY` and close after this many requests on a connection (h2c only).
    pub goaway_after: Option<u64>,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` the server announces (default: none).
    pub max_concurrent_streams: Option<u32>,
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct H2Stats {
    /// Requests answered (and reset on `/reset`): every one whose headers arrived,
    /// except the ones refused by `GOAWAY`.
    pub requests: AtomicU64,
    /// Connections accepted (after the TLS handshake, for TLS).
    pub connections: AtomicU64,
    /// The most streams in flight at once on any one connection.
    pub max_concurrent: AtomicUsize,
    /// `GOAWAY` frames sent (each refusing one request in flight).
    pub goaways: AtomicU64,
    /// Streams reset (`/reset`).
    pub resets: AtomicU64,
}

/// A running HTTP/2 test server on `127.0.0.1`, on a thread of its own; it stops
/// when the process ends.
pub struct H2Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its counts.
    pub stats: Arc<H2Stats>,
    /// With TLS: its self-signed certificate (PEM), for clients to trust.
    pub cert_pem: Option<String>,
}

impl H2Server {
    /// Start a server.
    pub fn start(opts: H2Options) -> io::Result<H2Server> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let stats = Arc::new(H2Stats::default());
        let (acceptor, cert_pem) = if opts.tls {
            let (a, pem) = pado_h1server::tls::make_acceptor_alpn(None, vec![b"h2".to_vec()])?;
            (Some(a), Some(pem))
        } else {
            (None, None)
        };
        let st = stats.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime for the h2 test server");
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).expect("listener");
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = tcp.set_nodelay(true);
                    let st = st.clone();
                    let opts = opts.clone();
                    let acceptor = acceptor.clone();
                    tokio::spawn(async move {
                        match acceptor {
                            Some(a) => {
                                if let Ok(tls) = a.accept(tcp).await {
                                    serve(tls, None, st, opts).await;
                                }
                            }
                            None => {
                                let raw = tcp.into_std().ok();
                                let Some(raw) = raw else { return };
                                let dup = raw.try_clone().ok();
                                let Ok(tcp) = tokio::net::TcpStream::from_std(raw) else {
                                    return;
                                };
                                serve(tcp, dup, st, opts).await;
                            }
                        }
                    });
                }
            });
        });
        Ok(H2Server {
            addr,
            stats,
            cert_pem,
        })
    }

    /// Requests answered.
    pub fn requests(&self) -> u64 {
        self.stats.requests.load(Ordering::SeqCst)
    }

    /// Connections accepted.
    pub fn connections(&self) -> u64 {
        self.stats.connections.load(Ordering::SeqCst)
    }

    /// The most streams in flight at once on one connection.
    pub fn max_concurrent(&self) -> usize {
        self.stats.max_concurrent.load(Ordering::SeqCst)
    }

    /// `GOAWAY`s sent.
    pub fn goaways(&self) -> u64 {
        self.stats.goaways.load(Ordering::SeqCst)
    }

    /// Streams reset.
    pub fn resets(&self) -> u64 {
        self.stats.resets.load(Ordering::SeqCst)
    }
}

async fn serve<T>(io: T, raw: Option<std::net::TcpStream>, st: Arc<H2Stats>, opts: H2Options)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut b = h2::server::Builder::new();
    if let Some(m) = opts.max_concurrent_streams {
        b.max_concurrent_streams(m);
    }
    let Ok(mut conn) = b.handshake::<_, Bytes>(io).await else {
        return;
    };
    st.connections.fetch_add(1, Ordering::SeqCst);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut seen = 0u64;
    let mut last_answered = 0u32;
    while let Some(accepted) = conn.accept().await {
        let Ok((req, mut respond)) = accepted else {
            break;
        };
        let id: u32 = respond.stream_id().into();
        seen += 1;
        if let (Some(n), Some(raw)) = (opts.goaway_after, raw.as_ref()) {
            if seen > n {
                // GOAWAY naming the last stream answered: this one is refused.
                let mut frame = vec![0, 0, 8, 0x7, 0, 0, 0, 0, 0];
                frame.extend_from_slice(&last_answered.to_be_bytes());
                frame.extend_from_slice(&0u32.to_be_bytes());
                let mut w = raw;
                let _ = w.write_all(&frame);
                let _ = w.flush();
                st.goaways.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                let _ = raw.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
        last_answered = id;
        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        st.max_concurrent.fetch_max(now, Ordering::SeqCst);
        let st = st.clone();
        let in_flight = in_flight.clone();
        let path = req.uri().path().to_string();
        let grpc = req
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        let head_only = req
            .headers()
            .get("x-lie")
            .is_some_and(|v| v.as_bytes() == b"head");
        let query = req.uri().query().unwrap_or("").to_string();
        let task = async move {
            // Drain the request body.
            let mut body = req.into_body();
            while let Some(Ok(d)) = body.data().await {
                let _ = body.flow_control().release_capacity(d.len());
            }
            st.requests.fetch_add(1, Ordering::SeqCst);
            if path == "/reset" {
                st.resets.fetch_add(1, Ordering::SeqCst);
                respond.send_reset(h2::Reason::REFUSED_STREAM);
                in_flight.fetch_sub(1, Ordering::SeqCst);
                return;
            }
            if path == "/delay" {
                let ms = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("ms="))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0u64);
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            in_flight.fetch_sub(1, Ordering::SeqCst);
            if grpc {
                // A call answered as if it succeeded, but with no grpc-status.
                let resp = http::Response::builder()
                    .status(200)
                    .header("content-type", "application/grpc")
                    .body(())
                    .expect("a response");
                if let Ok(mut s) = respond.send_response(resp, head_only) {
                    if !head_only {
                        // One empty message: flag 0, length 0.
                        let _ = s.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true);
                    }
                }
                return;
            }
            if let Some(coding) = path.strip_prefix("/encoded/") {
                let n = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("n="))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(10usize);
                let body = crate::encoded_body(coding, n).unwrap_or_default();
                let resp = http::Response::builder()
                    .status(200)
                    .header("content-type", "text/plain")
                    .header("content-encoding", coding)
                    .body(())
                    .expect("a response");
                if let Ok(mut s) = respond.send_response(resp, false) {
                    let half = body.len() / 2;
                    let body = Bytes::from(body);
                    let _ = s.send_data(body.slice(..half), false);
                    let _ = s.send_data(body.slice(half..), true);
                }
                return;
            }
            sse_or_ok(respond, &path, &query);
        };
        if opts.goaway_after.is_some() {
            // Answered in order, so "the last answered" is exact.
            task.await;
        } else {
            tokio::spawn(task);
        }
    }
}

/// `/sse`: the role event, `tokens` token events and `[DONE]`, each its own DATA
/// frame; with `cut=1`, half an event ends the stream instead of `[DONE]`. Any
/// other path: `200`, `ok\n`.
fn sse_or_ok(mut respond: h2::server::SendResponse<Bytes>, path: &str, query: &str) {
    if path != "/sse" {
        let resp = http::Response::builder()
            .status(200)
            .header("content-type", "text/plain")
            .body(())
            .expect("a response");
        if let Ok(mut s) = respond.send_response(resp, false) {
            let _ = s.send_data(Bytes::from_static(b"ok\n"), true);
        }
        return;
    }
    let param = |k: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
    };
    let tokens = param("tokens")
        .and_then(|v| v.parse().ok())
        .unwrap_or(3u64)
        .min(10_000);
    let cut = param("cut") == Some("1");
    let resp = http::Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(())
        .expect("a response");
    let Ok(mut s) = respond.send_response(resp, false) else {
        return;
    };
    let _ = s.send_data(
        Bytes::from_static(
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
        ),
        false,
    );
    for i in 0..tokens {
        let ev = format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"토큰{i}\"}}}}]}}\n\n");
        let _ = s.send_data(Bytes::from(ev), false);
    }
    let last: &'static [u8] = if cut {
        b"data: {\"choi"
    } else {
        b"data: [DONE]\n\n"
    };
    let _ = s.send_data(Bytes::from_static(last), true);
}

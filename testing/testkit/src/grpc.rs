//! A gRPC server for pado's tests (tonic, serving `proto/echo.proto`): it counts
//! calls, streams and messages exactly as it answers them, and behaves as each
//! request asks, so a test knows the truth pado's figures must match.
//!
//! | call | behaviour |
//! |---|---|
//! | `pado.echo.Echo/Echo` | after `delay_ms`, fails with `status` when it is not 0, else answers `text`, `n`, `inner` and `tags` back (plus `md:<value>` when the call carried `x-tag` metadata) |
//! | `pado.echo.Echo/Stream` | sends `count` replies (`index` 0, 1, ...) `delay_ms` apart, then ends with `status` |
//!
//! The reflection service (`grpc.reflection.v1` and/or `v1alpha`) is served on
//! request ([`Reflection`]).

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_stream::Stream;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod pb {
    tonic::include_proto!("pado.echo");
}

/// `proto/echo.proto`, for tests that write it beside a scenario.
pub const ECHO_PROTO: &str = include_str!("../proto/echo.proto");

/// The encoded descriptor set of `echo.proto` (what reflection serves).
const DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/echo_descriptor.bin"));

/// Which reflection services the server offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reflection {
    /// None: clients need the `.proto` file.
    Off,
    /// `grpc.reflection.v1` only.
    V1,
    /// `grpc.reflection.v1alpha` only (older servers).
    V1Alpha,
}

/// What the server counted since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrpcStats {
    /// Unary `Echo` calls received.
    pub unary: u64,
    /// Of them, answered with a non-OK status on request.
    pub unary_failed: u64,
    /// `Stream` calls received.
    pub streams: u64,
    /// Messages sent on streams.
    pub stream_msgs: u64,
    /// Reflection calls received.
    pub reflection: u64,
}

#[derive(Default)]
struct Counters {
    unary: AtomicU64,
    unary_failed: AtomicU64,
    streams: AtomicU64,
    stream_msgs: AtomicU64,
    reflection: AtomicU64,
}

struct EchoService {
    counters: Arc<Counters>,
}

type ReplyStream = Pin<Box<dyn Stream<Item = Result<pb::EchoReply, Status>> + Send>>;

#[tonic::async_trait]
impl pb::echo_server::Echo for EchoService {
    async fn echo(
        &self,
        request: Request<pb::EchoRequest>,
    ) -> Result<Response<pb::EchoReply>, Status> {
        self.counters.unary.fetch_add(1, Ordering::Relaxed);
        let tag = request
            .metadata()
            .get("x-tag")
            .and_then(|v| v.to_str().ok())
            .map(|v| format!("md:{v}"));
        let r = request.into_inner();
        if r.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(u64::from(r.delay_ms))).await;
        }
        if r.status != 0 {
            self.counters.unary_failed.fetch_add(1, Ordering::Relaxed);
            return Err(Status::new(r.status.into(), "failed on request"));
        }
        let mut tags = r.tags;
        tags.extend(tag);
        Ok(Response::new(pb::EchoReply {
            text: r.text,
            n: r.n,
            index: 0,
            inner: r.inner,
            tags,
        }))
    }

    type StreamStream = ReplyStream;

    async fn stream(
        &self,
        request: Request<pb::StreamRequest>,
    ) -> Result<Response<ReplyStream>, Status> {
        self.counters.streams.fetch_add(1, Ordering::Relaxed);
        let r = request.into_inner();
        let counters = Arc::clone(&self.counters);
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            for i in 0..r.count {
                if r.delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(u64::from(r.delay_ms))).await;
                }
                let reply = pb::EchoReply {
                    text: r.text.clone(),
                    n: i64::from(i),
                    index: i,
                    inner: None,
                    tags: Vec::new(),
                };
                if tx.send(Ok(reply)).await.is_err() {
                    return;
                }
                counters.stream_msgs.fetch_add(1, Ordering::Relaxed);
            }
            if r.status != 0 {
                let _ = tx
                    .send(Err(Status::new(
                        r.status.into(),
                        "stream failed on request",
                    )))
                    .await;
            }
        });
        Ok(Response::new(
            Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)) as ReplyStream,
        ))
    }
}

/// A running gRPC test server on 127.0.0.1 (h2c); stopped when dropped.
pub struct GrpcServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl GrpcServer {
    /// Start a server on an ephemeral port with the given reflection services.
    ///
    /// # Panics
    /// If it cannot start (no loopback, no threads): tests cannot go on.
    pub fn start(reflection: Reflection) -> GrpcServer {
        GrpcServer::try_start(reflection).expect("pado-testkit: cannot start gRPC server")
    }

    fn try_start(reflection: Reflection) -> io::Result<GrpcServer> {
        let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let (stop, mut stopped) = watch::channel(false);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("pado-testkit-grpc")
            .build()?;
        let c = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name("pado-testkit-grpc".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                    let echo = pb::echo_server::EchoServer::new(EchoService {
                        counters: Arc::clone(&c),
                    });
                    let counted = Arc::clone(&c);
                    let count = move |req: Request<()>| {
                        counted.reflection.fetch_add(1, Ordering::Relaxed);
                        Ok(req)
                    };
                    let mut router = tonic::transport::Server::builder().add_service(echo);
                    let builder = tonic_reflection::server::Builder::configure()
                        .register_encoded_file_descriptor_set(DESCRIPTOR);
                    match reflection {
                        Reflection::Off => {}
                        Reflection::V1 => {
                            if let Ok(s) = builder.build_v1() {
                                router = router.add_service(InterceptedService::new(s, count));
                            }
                        }
                        Reflection::V1Alpha => {
                            if let Ok(s) = builder.build_v1alpha() {
                                router = router.add_service(InterceptedService::new(s, count));
                            }
                        }
                    }
                    let _ = router
                        .serve_with_incoming_shutdown(incoming, async move {
                            let _ = stopped.wait_for(|s| *s).await;
                        })
                        .await;
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })?;
        Ok(GrpcServer {
            addr,
            counters,
            stop,
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, no trailing slash: a scenario `target`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What the server counted so far.
    pub fn stats(&self) -> GrpcStats {
        let c = &self.counters;
        GrpcStats {
            unary: c.unary.load(Ordering::Relaxed),
            unary_failed: c.unary_failed.load(Ordering::Relaxed),
            streams: c.streams.load(Ordering::Relaxed),
            stream_msgs: c.stream_msgs.load(Ordering::Relaxed),
            reflection: c.reflection.load(Ordering::Relaxed),
        }
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

//! A gRPC server for pado's tests (tonic, serving `proto/echo.proto`): it counts
//! calls, streams and messages exactly as it answers them, and behaves as each
//! request asks, so a test knows the truth pado's figures must match.
//!
//! | call | behaviour |
//! |---|---|
//! | `pado.echo.Echo/Echo` | after `delay_ms`, fails with `status` when it is not 0, else answers `text`, `n`, `inner` and `tags` back (plus `md:<value>` when the call carried `x-tag` metadata, and `bin:<hex>` of the bytes of `x-raw-bin` binary metadata, which it also sends back as the response header `x-echo-bin`) |
//! | `pado.echo.Echo/Stream` | sends `count` replies (`index` 0, 1, ...) `delay_ms` apart, then ends with `status` |
//! | `pado.echo.Echo/Collect` | reads requests until the client ends its writing, then answers once: their `text`s joined with `,`, `n` = how many; the first non-zero `status` fails the call with it |
//! | `pado.echo.Echo/Chat` | answers each request as it comes (`text` back, `index` = its place), ends when the client ends; a non-zero `status` ends the call with it |
//!
//! Every answer carries the response header `x-served-by: pado-testkit`; a
//! failure carries `x-failed-on: request` in its trailers (metadata a client
//! must show). With [`GrpcOptions::tls`] the server speaks TLS (a fresh
//! self-signed certificate, [`GrpcServer::cert_pem`]), and with
//! [`GrpcOptions::client_ca_pem`] it requires a client certificate that CA
//! signed ([`client_pki`] makes both).
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

#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
mod pb {
    tonic::include_proto!("pado.echo");
}

/// `proto/echo.proto`, for tests that write it beside a scenario.
pub const ECHO_PROTO: &str = include_str!("../proto/echo.proto");

/// The encoded descriptor set of `echo.proto` (what reflection serves).
const DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/echo_descriptor.bin"));

/// `echo.proto` as a binary FileDescriptorSet, as `protoc --include_imports
/// --descriptor_set_out` writes it (compiled by this crate's build script): what
/// a k6 script's `client.loadProtoset()` reads.
pub const ECHO_DESCRIPTOR_SET: &[u8] = DESCRIPTOR;

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
    /// `Collect` (client stream) calls received.
    pub collects: u64,
    /// Messages read on them.
    pub collect_msgs: u64,
    /// `Chat` (bidirectional) calls received.
    pub chats: u64,
    /// Messages read on them.
    pub chat_msgs_in: u64,
    /// Messages sent on them.
    pub chat_msgs_out: u64,
}

#[derive(Default)]
struct Counters {
    unary: AtomicU64,
    unary_failed: AtomicU64,
    streams: AtomicU64,
    stream_msgs: AtomicU64,
    reflection: AtomicU64,
    collects: AtomicU64,
    collect_msgs: AtomicU64,
    chats: AtomicU64,
    chat_msgs_in: AtomicU64,
    chat_msgs_out: AtomicU64,
}

/// The response header every answer carries.
fn served_by<T>(mut r: Response<T>) -> Response<T> {
    r.metadata_mut().insert(
        "x-served-by",
        tonic::metadata::MetadataValue::from_static("pado-testkit"),
    );
    r
}

/// A failure on request: its status, message, and `x-failed-on` trailer.
fn failed_on_request(code: i32, message: &str) -> Status {
    let mut md = tonic::metadata::MetadataMap::new();
    md.insert(
        "x-failed-on",
        tonic::metadata::MetadataValue::from_static("request"),
    );
    Status::with_metadata(code.into(), message, md)
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
        // Binary metadata arrives base64-encoded; tonic decodes it: the bytes.
        let raw = request
            .metadata()
            .get_bin("x-raw-bin")
            .and_then(|v| v.to_bytes().ok());
        let r = request.into_inner();
        if r.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(u64::from(r.delay_ms))).await;
        }
        if r.status != 0 {
            self.counters.unary_failed.fetch_add(1, Ordering::Relaxed);
            return Err(failed_on_request(r.status, "failed on request"));
        }
        let mut tags = r.tags;
        tags.extend(tag);
        if let Some(b) = &raw {
            tags.push(format!(
                "bin:{}",
                b.iter().map(|x| format!("{x:02x}")).collect::<String>()
            ));
        }
        let mut reply = served_by(Response::new(pb::EchoReply {
            text: r.text,
            n: r.n,
            index: 0,
            inner: r.inner,
            tags,
        }));
        if let Some(b) = raw {
            reply
                .metadata_mut()
                .insert_bin("x-echo-bin", tonic::metadata::MetadataValue::from_bytes(&b));
        }
        Ok(reply)
    }

    async fn collect(
        &self,
        request: Request<tonic::Streaming<pb::EchoRequest>>,
    ) -> Result<Response<pb::EchoReply>, Status> {
        self.counters.collects.fetch_add(1, Ordering::Relaxed);
        let mut incoming = request.into_inner();
        let mut texts = Vec::new();
        let mut failure = 0;
        while let Some(m) = incoming.message().await? {
            self.counters.collect_msgs.fetch_add(1, Ordering::Relaxed);
            if failure == 0 {
                failure = m.status;
            }
            texts.push(m.text);
        }
        if failure != 0 {
            return Err(failed_on_request(failure, "collect failed on request"));
        }
        Ok(served_by(Response::new(pb::EchoReply {
            n: texts.len() as i64,
            text: texts.join(","),
            ..pb::EchoReply::default()
        })))
    }

    type ChatStream = ReplyStream;

    async fn chat(
        &self,
        request: Request<tonic::Streaming<pb::EchoRequest>>,
    ) -> Result<Response<ReplyStream>, Status> {
        self.counters.chats.fetch_add(1, Ordering::Relaxed);
        let mut incoming = request.into_inner();
        let counters = Arc::clone(&self.counters);
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            let mut index = 0;
            loop {
                let m = match incoming.message().await {
                    Ok(Some(m)) => m,
                    Ok(None) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                };
                counters.chat_msgs_in.fetch_add(1, Ordering::Relaxed);
                if m.status != 0 {
                    let _ = tx
                        .send(Err(failed_on_request(m.status, "chat failed on request")))
                        .await;
                    return;
                }
                let reply = pb::EchoReply {
                    text: m.text,
                    n: m.n,
                    index,
                    inner: m.inner,
                    tags: m.tags,
                };
                index += 1;
                if tx.send(Ok(reply)).await.is_err() {
                    return;
                }
                counters.chat_msgs_out.fetch_add(1, Ordering::Relaxed);
            }
        });
        Ok(served_by(Response::new(
            Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)) as ReplyStream,
        )))
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

/// How to run a [`GrpcServer`]. Build with `..Default::default()`.
#[derive(Clone, Debug)]
pub struct GrpcOptions {
    /// Which reflection services to offer.
    pub reflection: Reflection,
    /// Speak TLS (ALPN `h2`) with a fresh self-signed certificate for
    /// `localhost` and `127.0.0.1` ([`GrpcServer::cert_pem`]).
    pub tls: bool,
    /// With `tls`: require a client certificate this CA (PEM) signed; a client
    /// without one fails its handshake.
    pub client_ca_pem: Option<String>,
}

impl Default for GrpcOptions {
    fn default() -> Self {
        GrpcOptions {
            reflection: Reflection::Off,
            tls: false,
            client_ca_pem: None,
        }
    }
}

/// A CA and a client certificate it signed, as PEM: `(ca, client cert, client
/// key)`, for a server that requires mutual TLS.
///
/// # Panics
/// If rcgen cannot make them (tests cannot go on).
pub fn client_pki() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().expect("pado-testkit: a CA key");
    let mut ca = CertificateParams::new(vec![]).expect("pado-testkit: CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).expect("pado-testkit: a CA");
    let client_key = KeyPair::generate().expect("pado-testkit: a client key");
    let client = CertificateParams::new(vec!["pado-client".into()])
        .expect("pado-testkit: client params")
        .signed_by(&client_key, &ca_cert, &ca_key)
        .expect("pado-testkit: a client certificate");
    (ca_cert.pem(), client.pem(), client_key.serialize_pem())
}

/// A server-side TLS connection as tonic serves it.
struct TlsConn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>);

impl tonic::transport::server::Connected for TlsConn {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl tokio::io::AsyncRead for TlsConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for TlsConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// A running gRPC test server on 127.0.0.1 (h2c, or TLS); stopped when dropped.
pub struct GrpcServer {
    addr: SocketAddr,
    cert_pem: Option<String>,
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
        GrpcServer::start_with(GrpcOptions {
            reflection,
            ..GrpcOptions::default()
        })
    }

    /// Start a server with these options.
    ///
    /// # Panics
    /// If it cannot start (no loopback, no threads): tests cannot go on.
    pub fn start_with(opts: GrpcOptions) -> GrpcServer {
        GrpcServer::try_start(opts).expect("pado-testkit: cannot start gRPC server")
    }

    /// The server's certificate (PEM) when it speaks TLS: what a client trusts.
    pub fn cert_pem(&self) -> Option<String> {
        self.cert_pem.clone()
    }

    /// `127.0.0.1:PORT`: what k6's `client.connect()` takes.
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    fn try_start(opts: GrpcOptions) -> io::Result<GrpcServer> {
        let reflection = opts.reflection;
        let (acceptor, cert_pem) = if opts.tls {
            let (a, pem) = pado_h1server::tls::make_acceptor_alpn(
                opts.client_ca_pem.as_deref(),
                vec![b"h2".to_vec()],
            )?;
            (Some(a), Some(pem))
        } else {
            (None, None)
        };
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
                    let shutdown = async move {
                        let _ = stopped.wait_for(|s| *s).await;
                    };
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
                    match acceptor {
                        None => {
                            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                            let _ = router
                                .serve_with_incoming_shutdown(incoming, shutdown)
                                .await;
                        }
                        Some(acceptor) => {
                            // Each connection's handshake in a task of its own; a
                            // client that fails it (no client certificate) is dropped.
                            let (tx, rx) = tokio::sync::mpsc::channel::<io::Result<TlsConn>>(16);
                            tokio::spawn(async move {
                                while let Ok((tcp, _)) = listener.accept().await {
                                    let (acceptor, tx) = (acceptor.clone(), tx.clone());
                                    tokio::spawn(async move {
                                        if let Ok(tls) = acceptor.accept(tcp).await {
                                            let _ = tx.send(Ok(TlsConn(tls))).await;
                                        }
                                    });
                                }
                            });
                            let incoming = tokio_stream::wrappers::ReceiverStream::new(rx);
                            let _ = router
                                .serve_with_incoming_shutdown(incoming, shutdown)
                                .await;
                        }
                    }
                });
                runtime.shutdown_timeout(Duration::from_secs(1));
            })?;
        Ok(GrpcServer {
            addr,
            cert_pem,
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
            collects: c.collects.load(Ordering::Relaxed),
            collect_msgs: c.collect_msgs.load(Ordering::Relaxed),
            chats: c.chats.load(Ordering::Relaxed),
            chat_msgs_in: c.chat_msgs_in.load(Ordering::Relaxed),
            chat_msgs_out: c.chat_msgs_out.load(Ordering::Relaxed),
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

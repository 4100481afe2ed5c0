//! Connections: TCP (and TLS through rustls) to one origin, with the connect and
//! handshake phases timed separately as k6 reports them.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::proxy::{Proxy, ProxyConfig};
use crate::resolve::{NameCache, DEFAULT_TTL};
use pado_metrics::ErrorKind;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Where requests go: scheme, host and port resolved once before the run.
#[derive(Clone, Debug)]
pub struct Origin {
    /// `http://host:port` as users read it.
    pub label: String,
    /// Host as written (the `Host` header and TLS server name).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Addresses resolved once before the run (for its warning about a name that
    /// does not resolve); connections use them only for an IP address, and resolve a
    /// name through [`Origin::names`] when they are made.
    pub addrs: Vec<SocketAddr>,
    /// The name's resolver cache (`None` for an IP address): looked up when a
    /// connection is made, timed as `http_req_dns`.
    pub names: Option<Arc<NameCache>>,
    /// The HTTP proxy connections go through (a `CONNECT` tunnel), `None` for a
    /// direct connection.
    pub proxy: Option<Arc<Proxy>>,
    /// TLS, when the scheme is https (ALPN offers only `http/1.1`).
    pub tls: Option<TlsTarget>,
    /// The HTTP version requests to this origin are sent with (`defaults.http`).
    pub protocol: Protocol,
    /// The connector HTTP/2 connections use over https: its ALPN offers `h2` (and
    /// `http/1.1` as well for [`Protocol::Auto`]). `None` for plain http and HTTP/1.1.
    pub h2_tls: Option<TlsTarget>,
}

/// Which HTTP version a run speaks (`defaults.http`, `--http2`, `--http`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 only (the default: nothing changes for existing scenarios).
    #[default]
    Http1,
    /// HTTP/2 only: ALPN `h2` over https (a server that does not choose it fails the
    /// request as `h2_not_negotiated`), h2c with prior knowledge over plain http.
    Http2,
    /// Over https, ALPN offers `h2` and `http/1.1` and the server decides; over plain
    /// http, HTTP/1.1.
    Auto,
}

impl Protocol {
    /// Whether requests to an origin of this scheme go through the HTTP/2 pool
    /// (which, for `Auto`, may find the server chose HTTP/1.1).
    pub fn pooled(self, https: bool) -> bool {
        match self {
            Protocol::Http1 => false,
            Protocol::Http2 => true,
            Protocol::Auto => https,
        }
    }
}

impl Origin {
    /// The origin of `url`, resolved now (an unresolvable host gives an origin with
    /// no addresses, whose requests fail as `dns`). `tls` supplies the client
    /// configuration, only called for https, so callers can share one.
    pub fn for_url(
        url: &url::Url,
        tls: impl FnOnce() -> Arc<rustls::ClientConfig>,
    ) -> Result<Origin, String> {
        Origin::for_url_with(url, Protocol::Http1, tls, || unreachable!())
    }

    /// [`Origin::for_url`] for a protocol: `h2_tls` supplies the client configuration
    /// whose ALPN offers `h2`, only called for https when the protocol may use HTTP/2.
    pub fn for_url_with(
        url: &url::Url,
        protocol: Protocol,
        tls: impl FnOnce() -> Arc<rustls::ClientConfig>,
        h2_tls: impl FnOnce() -> Arc<rustls::ClientConfig>,
    ) -> Result<Origin, String> {
        let scheme = url.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(format!("`{url}`: only http and https are supported"));
        }
        let host = url
            .host_str()
            .ok_or_else(|| format!("`{url}` has no host"))?
            .to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        // IPv6 literals come bracketed from the URL.
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let addrs: Vec<_> = std::net::ToSocketAddrs::to_socket_addrs(&(bare.as_str(), port))
            .map(|a| a.collect())
            .unwrap_or_default();
        let names = bare
            .parse::<std::net::IpAddr>()
            .is_err()
            .then(|| Arc::new(NameCache::new(&bare, port, DEFAULT_TTL)));
        let tls = if scheme == "https" {
            let server_name = ServerName::try_from(bare.clone())
                .map_err(|e| format!("`{host}` is not a valid TLS server name: {e}"))?;
            Some(TlsTarget {
                connector: TlsConnector::from(tls()),
                server_name,
            })
        } else {
            None
        };
        let h2_tls = match &tls {
            Some(t) if protocol != Protocol::Http1 => Some(TlsTarget {
                connector: TlsConnector::from(h2_tls()),
                server_name: t.server_name.clone(),
            }),
            _ => None,
        };
        Ok(Origin {
            label: format!("{scheme}://{host}:{port}"),
            host,
            port,
            addrs,
            names,
            proxy: None,
            tls,
            protocol,
            h2_tls,
        })
    }

    /// This origin reached through the proxy `proxies` chooses for it (none for a
    /// host in `NO_PROXY`).
    pub fn with_proxies(mut self, proxies: &ProxyConfig) -> Self {
        self.proxy = proxies.for_target(self.tls.is_some(), &self.host);
        self
    }

    /// This origin with its resolved names kept for `ttl` (`defaults.dns.ttl`; zero
    /// resolves for every new connection).
    pub fn with_dns_ttl(mut self, ttl: Duration) -> Self {
        if self.names.is_some() {
            let bare = self.host.trim_start_matches('[').trim_end_matches(']');
            self.names = Some(Arc::new(NameCache::new(bare, self.port, ttl)));
        }
        self
    }
}

/// TLS settings for one origin.
#[derive(Clone)]
pub struct TlsTarget {
    /// Connector sharing the run's client config.
    pub connector: TlsConnector,
    /// The name sent as SNI and verified against the certificate.
    pub server_name: ServerName<'static>,
}

impl std::fmt::Debug for TlsTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsTarget({:?})", self.server_name)
    }
}

/// A plain or TLS stream.
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// The protocol the server chose in ALPN (`None` for plain TCP or no choice).
    pub fn alpn(&self) -> Option<&[u8]> {
        match self {
            Stream::Plain(_) => None,
            Stream::Tls(s) => s.get_ref().1.alpn_protocol(),
        }
    }

    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }

    /// Whether the peer has closed (or sent unsolicited bytes on) an idle connection,
    /// checked without blocking. Used before reusing a connection that sat idle, so a
    /// server's keep-alive timeout does not turn into a failed request.
    pub fn looks_closed(&self) -> bool {
        let sock = socket2::SockRef::from(self.tcp());
        let mut b = [std::mem::MaybeUninit::<u8>::uninit(); 1];
        match sock.peek(&mut b) {
            Ok(_) => true, // EOF (0) or stray bytes: either way not reusable
            Err(e) => e.kind() != io::ErrorKind::WouldBlock,
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// An open connection with its reusable read buffer.
pub struct Conn {
    /// The stream.
    pub stream: Stream,
    /// Read buffer, reused for every response on this connection.
    pub buf: Vec<u8>,
    /// When the last exchange finished.
    pub idle_since: Instant,
}

/// Initial read buffer size: most heads fit; bodies stream through it.
pub const READ_BUF: usize = 4096;

/// Time spent in connection setup.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetupTimes {
    /// Name resolution (`http_req_dns`; zero for an IP address or a cached name).
    pub dns: Duration,
    /// TCP connect.
    pub connecting: Duration,
    /// TLS handshake.
    pub tls: Duration,
}

/// Why a connection could not be made: its category and, where the category alone
/// does not say (a TLS handshake), a reason in a few words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectError {
    /// The failure's category.
    pub kind: ErrorKind,
    /// Why, for a TLS handshake ("certificate signed by an unknown issuer ...").
    pub reason: Option<&'static str>,
}

impl From<ErrorKind> for ConnectError {
    fn from(kind: ErrorKind) -> Self {
        ConnectError { kind, reason: None }
    }
}

/// Open a connection to `origin`, timing TCP and TLS. `budget` bounds the whole setup.
pub async fn connect(
    origin: &Origin,
    budget: Duration,
) -> Result<(Conn, SetupTimes), ConnectError> {
    let (stream, times) = connect_stream(origin, origin.tls.as_ref(), budget).await?;
    Ok((
        Conn {
            stream,
            buf: Vec::with_capacity(READ_BUF),
            idle_since: Instant::now(),
        },
        times,
    ))
}

/// Open a stream to `origin` over `tls` (when given, with its connector's ALPN),
/// timing TCP and TLS. `budget` bounds the whole setup.
pub async fn connect_stream(
    origin: &Origin,
    tls: Option<&TlsTarget>,
    budget: Duration,
) -> Result<(Stream, SetupTimes), ConnectError> {
    let start = Instant::now();
    // Through a proxy, its name is the one resolved (the proxy resolves the target's).
    let (names, fixed) = match &origin.proxy {
        Some(p) => p.endpoint(),
        None => (&origin.names, origin.addrs.as_slice()),
    };
    let (resolved, dns) = match names {
        Some(n) => {
            let (a, took) = n.resolve(budget).await?;
            (Some(a), took)
        }
        None if fixed.is_empty() => return Err(ErrorKind::Dns.into()),
        None => (None, Duration::ZERO),
    };
    let addrs = resolved.as_deref().unwrap_or(fixed);
    let budget = budget.saturating_sub(start.elapsed());
    let t0 = Instant::now();
    #[allow(unused_mut)]
    let mut tcp = connect_any(addrs, budget).await?;
    let _ = tcp.set_nodelay(true);
    if let Some(p) = &origin.proxy {
        // The tunnel's round trip is part of connecting, as the proxy's TCP is.
        let bare = origin.host.trim_start_matches('[').trim_end_matches(']');
        let host = if bare.contains(':') {
            origin.host.as_str()
        } else {
            bare
        };
        crate::proxy::tunnel(&mut tcp, p, host, origin.port, t0 + budget).await?;
    }
    let t1 = Instant::now();
    let mut times = SetupTimes {
        dns,
        connecting: t1 - t0,
        tls: Duration::ZERO,
    };
    let stream = match tls {
        None => Stream::Plain(tcp),
        Some(t) => {
            let left = budget.saturating_sub(t1 - t0);
            let hs = t.connector.connect(t.server_name.clone(), tcp);
            match tokio::time::timeout(left, hs).await {
                Err(_) => return Err(ErrorKind::Timeout.into()),
                Ok(Err(e)) => {
                    return Err(ConnectError {
                        kind: ErrorKind::Tls,
                        reason: Some(tls_failure_reason(&e)),
                    })
                }
                Ok(Ok(s)) => {
                    times.tls = t1.elapsed();
                    Stream::Tls(Box::new(s))
                }
            }
        }
    };
    Ok((stream, times))
}

/// The reason of a handshake the server ended because it offers none of the
/// protocols the client asked for in ALPN (`h2` alone, for HTTP/2).
pub const NO_COMMON_ALPN: &str = "the server offers none of the protocols asked for in ALPN";

/// A TLS handshake failure in a few words a user can act on.
fn tls_failure_reason(e: &io::Error) -> &'static str {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e.get_ref().and_then(|i| i.downcast_ref::<E>()) {
        Some(E::InvalidCertificate(c)) => match c {
            C::UnknownIssuer => {
                "certificate signed by an unknown issuer (self-signed or a private CA)"
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                "certificate not valid for this host name"
            }
            C::Expired | C::ExpiredContext { .. } => "certificate expired",
            C::NotValidYet | C::NotValidYetContext { .. } => "certificate not valid yet",
            C::Revoked => "certificate revoked",
            C::BadSignature => "certificate with a bad signature",
            _ => "certificate rejected",
        },
        Some(E::AlertReceived(A::HandshakeFailure)) => {
            "the server refused the handshake (no common protocol version or cipher)"
        }
        Some(E::AlertReceived(A::CertificateRequired)) | Some(E::NoCertificatesPresented) => {
            "the server wants a client certificate"
        }
        Some(E::AlertReceived(A::NoApplicationProtocol)) => NO_COMMON_ALPN,
        Some(E::AlertReceived(_)) => "the server ended the handshake with an alert",
        Some(E::PeerIncompatible(_)) => "no TLS version or cipher in common with the server",
        Some(E::InvalidMessage(_)) | Some(E::PeerMisbehaved(_)) => {
            "the server did not speak TLS as expected (is it plain HTTP?)"
        }
        Some(_) => "handshake failed",
        None => match e.kind() {
            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
                "the server closed the connection during the handshake"
            }
            _ => "handshake failed",
        },
    }
}

/// Connect to the first of `addrs` that accepts, in resolver order. A name such as
/// `localhost` often resolves to `::1` first while the service listens only on
/// `127.0.0.1`: trying just the first address would fail every request. Each address
/// gets an equal share of what is left of `budget` (so one black-holed address cannot
/// eat the whole connect timeout); the error of the last attempt is reported.
pub async fn connect_any(addrs: &[SocketAddr], budget: Duration) -> Result<TcpStream, ErrorKind> {
    let start = Instant::now();
    let mut last = ErrorKind::Dns;
    for (i, addr) in addrs.iter().enumerate() {
        let left = budget.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(ErrorKind::ConnectTimeout);
        }
        let share = left / (addrs.len() - i) as u32;
        match tokio::time::timeout(share, TcpStream::connect(addr)).await {
            Err(_) => last = ErrorKind::ConnectTimeout,
            Ok(Err(e)) => last = connect_error(&e),
            Ok(Ok(s)) => return Ok(s),
        }
    }
    Err(last)
}

fn connect_error(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => ErrorKind::Reset,
        _ => ErrorKind::Io,
    }
}

/// Map an I/O error during an exchange to its category.
pub fn io_error_kind(e: &io::Error, tls: bool) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof
        | io::ErrorKind::NotConnected => ErrorKind::Reset,
        io::ErrorKind::TimedOut => ErrorKind::Timeout,
        io::ErrorKind::InvalidData if tls => ErrorKind::Tls,
        io::ErrorKind::InvalidData => ErrorKind::Protocol,
        _ => ErrorKind::Io,
    }
}

/// Build the shared rustls client configuration. `insecure` accepts any certificate
/// (for test systems with self-signed certificates), as `--insecure` promises;
/// otherwise the system's trust store and the bundled roots are trusted. A run's
/// requests use [`crate::TlsSettings`], which adds a CA file and a client
/// certificate.
pub fn tls_client_config(insecure: bool) -> Arc<rustls::ClientConfig> {
    tls_client_config_alpn(insecure, &[b"http/1.1"])
}

/// [`tls_client_config`] whose ALPN offers `alpn`, in order of preference: `h2`
/// alone for HTTP/2, `h2` then `http/1.1` to let the server decide.
pub fn tls_client_config_alpn(insecure: bool, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    Arc::new(
        crate::trust::client_config_for(insecure, &[], None, alpn)
            .expect("no CA file or client certificate to refuse"),
    )
}

/// A verifier that accepts any server certificate (`--insecure`), still checking
/// the handshake's signatures.
#[derive(Debug)]
pub(crate) struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl AcceptAny {
    pub(crate) fn new(provider: Arc<rustls::crypto::CryptoProvider>) -> Self {
        AcceptAny(provider)
    }
}

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tls_failures_are_named_in_words() {
        use rustls::{AlertDescription, CertificateError, Error};
        // As tokio-rustls hands a failed handshake back.
        let wrapped = |e: Error| io::Error::new(io::ErrorKind::InvalidData, e);
        let cases = [
            (
                Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "unknown issuer",
            ),
            (
                Error::InvalidCertificate(CertificateError::NotValidForName),
                "not valid for this host name",
            ),
            (
                Error::InvalidCertificate(CertificateError::Expired),
                "expired",
            ),
            (
                Error::AlertReceived(AlertDescription::HandshakeFailure),
                "refused the handshake",
            ),
        ];
        for (e, says) in cases {
            let r = tls_failure_reason(&wrapped(e));
            assert!(r.contains(says), "{r}");
        }
        let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "eof");
        assert!(tls_failure_reason(&eof).contains("closed the connection"));
    }

    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// `localhost` resolving to `::1` first while the service listens only on
    /// `127.0.0.1`: the second address must be tried.
    #[test]
    fn connect_tries_every_resolved_address_in_order() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Nothing listens on [::1]:port (refused, or unreachable without IPv6), and a
        // port just released on 127.0.0.1 is closed.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_addr = closed.local_addr().unwrap();
        drop(closed);
        let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
        let open = listener.local_addr().unwrap();
        let got = rt().block_on(connect_any(
            &[v6, closed_addr, open],
            Duration::from_secs(5),
        ));
        let s = got.expect("the open address is reached");
        assert_eq!(s.peer_addr().unwrap(), open);
        // Every address closed: the last refusal is reported, not `dns`.
        let e = rt().block_on(connect_any(&[closed_addr], Duration::from_secs(5)));
        assert_eq!(e.err(), Some(ErrorKind::ConnectRefused));
    }
}

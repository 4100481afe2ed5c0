//! pado's own HTTP/1.1 client: pre-built request bytes, httparse for heads, one reused
//! buffer per connection. A general client (hyper, reqwest) pays for channels, header
//! maps and per-request buffers that a load generator does not need; see
//! ARCHITECTURE.md for the measured difference.
//!
//! It is a crate of its own so that what only needs to make requests (the engine's
//! virtual users, `pado-observe`'s scraper, the fuzz targets) depends on the client
//! and not on the whole engine. It knows `pado-metrics` only for [`ErrorKind`], the
//! category a failed exchange is counted under, and the failure-sample size.
//!
//! - [`control`]: one small control-plane request (a generator's, a live output's,
//!   a scrape, an event's call): framed once, bounded in time and size.
//! - [`conn`]: connecting (TCP, then TLS through rustls), timed per phase.
//! - [`deadline`]: an exchange's deadline, its timer armed once and then read.
//! - [`decode`]: gzip, br, zstd and deflate response bodies decoded as they stream.
//! - [`exchange`]: one timed request/response on a VU's connection.
//! - [`grpc`]: one timed gRPC call (unary or server streaming) on an HTTP/2 stream.
//! - [`h2conn`]: HTTP/2 connections a worker's VUs share, streams per connection.
//! - [`h2exchange`]: one timed request/response on an HTTP/2 stream.
//! - [`h2sniff`]: an HTTP/1.1 answer to h2c's preface told apart from a broken HTTP/2 server.
//! - [`proxy`]: HTTP proxies (flag, file, environment) and the `CONNECT` tunnel.
//! - [`resolve`]: name resolution when a connection is made, with the run's cache.
//! - [`response`]: sans-I/O response framing (heads, bodies, chunked decoding).
//! - [`sse`]: Server-Sent Events parsed as a body streams (the WHATWG rules).
//! - [`status`]: the set of statuses a request accepts.
//! - [`trust`]: the roots TLS trusts (system, bundled, a CA file) and a client
//!   certificate for mutual TLS.
//!
//! [`ErrorKind`]: pado_metrics::ErrorKind

pub mod conn;
pub mod control;
pub mod deadline;
pub mod decode;
pub mod exchange;
pub mod grpc;
pub mod grpc_stream;
pub mod h2conn;
pub mod h2exchange;
pub mod h2sniff;
mod own_task;
pub mod proxy;
pub mod resolve;
pub mod response;
pub mod sse;
pub mod status;
pub mod trust;

pub use conn::{
    tls_client_config, tls_client_config_alpn, Conn, ConnectError, Origin, Protocol, TlsTarget,
};
pub use control::{host_header, origin_form, ControlAnswer, ControlRequest};
pub use exchange::{exchange, exchange_into, idempotent_method, is_redirect, Exchange, RequestRef};
pub use grpc::{exchange_grpc, GrpcCall, GrpcOutcome, GrpcRequest};
pub use h2conn::H2Pool;
pub use h2exchange::{exchange_h2, exchange_h2_into, H2Request, UseHttp1};
pub use proxy::{Proxy, ProxyConfig, ProxyError};
pub use status::StatusSet;
pub use trust::{TlsFileError, TlsSettings};

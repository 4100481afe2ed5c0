//! A small HTTP/1.1 server on tokio + httparse, shared by pado's own servers: the demo
//! target (`pado-demo-target`) and the test server (`pado-testkit`). No HTTP framework
//! in pado's build: both servers need exact control of the bytes on the wire (the test
//! server misbehaves on purpose), which a framework hides.
//!
//! - [`request`]: reading one request off a connection ([`read_request`]).
//! - [`gated`]: reading one request on a server strangers can reach: the head
//!   judged before the body is read, every wait bounded ([`read_request_gated`]).
//! - [`linger`]: closing a connection after a refusal without losing the
//!   answer to a TCP reset: the body a client sends anyway is discarded, bounded in
//!   bytes and time ([`lingering_close`], [`LINGER`]).
//! - [`response`]: writing one ([`Head`], [`write_response`], [`reason`] from one
//!   table, chunked framing).
//! - [`server`]: the lifecycle: [`Server::bind`], [`Server::serve`] until a
//!   [`ShutdownSignal`], and [`ServerThread`] for a server on a thread of its own.
//!
//! - [`tls`] (feature `tls`): a self-signed certificate and a TLS acceptor with the
//!   protocols offered in ALPN.
//!
//! - [`body_anyway`] (feature `body-anyway`, tests only): the client those
//!   refusals are tested with, which sends a body without waiting for the answer.
//!
//! What each server does with a request (routing, handlers, misbehaviour) stays in it.

#[cfg(feature = "body-anyway")]
pub mod body_anyway;
pub mod gated;
pub mod linger;
pub mod request;
pub mod response;
pub mod server;
#[cfg(feature = "tls")]
pub mod tls;

pub use gated::{read_request_gated, Gate, Gated, Patience};
pub use linger::{lingering_close, Linger, LingerEnd, Lingered, Unread, LINGER};
pub use request::{
    parse_query, percent_decode, read_request, split_target, ReadError, Request, MAX_BODY, MAX_HEAD,
};
pub use response::{connection_value, reason, write_chunk, write_response, Head, LAST_CHUNK};
pub use server::{shutdown_pair, Server, ServerThread, ShutdownHandle, ShutdownSignal};

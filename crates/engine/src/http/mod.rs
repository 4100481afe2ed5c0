//! pado's own HTTP/1.1 client: pre-built request bytes, httparse for heads, one reused
//! buffer per connection. A general client (hyper, reqwest) pays for channels, header
//! maps and per-request buffers that a load generator does not need; see
//! ARCHITECTURE.md for the measured difference.

pub mod conn;
pub mod exchange;
pub mod response;

pub use conn::{tls_client_config, Conn, Origin, TlsTarget};
pub use exchange::{exchange, idempotent_method, Exchange, RequestRef};

//! One request's measurement, the central record of the engine (as in vegeta): what the
//! engine hands to the metrics side. It is a plain value on the stack; recording it
//! allocates nothing.

use crate::protocols::{HttpVersion, NewConnection};
use crate::ErrorKind;

/// Timing phases of one HTTP exchange, in microseconds, named as k6 names them so
/// users of k6 recognise them (`http_req_connecting`, `http_req_waiting`, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    /// Time spent waiting before the request could start: for the first request of an
    /// open-model iteration the delay between its scheduled and actual start.
    pub blocked_us: u64,
    /// Name resolution when a connection was made (`http_req_dns`): 0 on a reused
    /// connection, for an IP address, and for a name the run's resolver cache held.
    pub dns_us: u64,
    /// TCP connect (0 on a reused connection).
    pub connecting_us: u64,
    /// TLS handshake (0 on plain HTTP or a reused connection).
    pub tls_us: u64,
    /// Writing the request bytes.
    pub sending_us: u64,
    /// From the last byte written to the first byte of the response (time to first byte).
    pub waiting_us: u64,
    /// From the first to the last byte of the response.
    pub receiving_us: u64,
    /// The request duration users compare against SLAs. In the closed model it is
    /// sending + waiting + receiving (k6's `http_req_duration`); in the open model it is
    /// measured from the scheduled start, so generator or target stalls are not hidden.
    pub duration_us: u64,
}

/// What one request produced. `status` is 0 when no response was received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestSample {
    /// HTTP status code, or 0 when the exchange failed before a status line arrived.
    pub status: u16,
    /// The transport failure, if any.
    pub error: Option<ErrorKind>,
    /// Whether the request counts as failed: a transport error, a status >= 400 by the
    /// default expectation, or a failed check that fails the request.
    pub failed: bool,
    /// Whether it failed only because of a check (status and transport were fine).
    pub failed_by_check: bool,
    /// Timing phases.
    pub phases: Phases,
    /// Request bytes written to the socket (head and body).
    pub bytes_sent: u64,
    /// Response bytes read from the socket (head and body, before chunk decoding).
    pub bytes_received: u64,
    /// The request was sent again on a new connection because the server had closed
    /// the kept-alive one before answering (a reconnect, not a failure).
    pub reconnected: bool,
    /// Checks or extraction needed the body and it was longer than `max_body`: they
    /// saw only its beginning (counted so the summary can say so).
    pub body_cut: bool,
    /// A response with a `Content-Encoding` pado decodes: its body's bytes as
    /// received (after chunked framing). 0 for identity responses.
    pub body_encoded: u64,
    /// The same body's bytes after decoding.
    pub body_decoded: u64,
    /// The HTTP version of the connection it went on; `None` when it reached none
    /// (never built, no connection could be made): `summary.json`'s `http_versions`.
    pub http_version: Option<HttpVersion>,
    /// Whether it opened the connection it went on (`connections_opened`).
    pub opened: NewConnection,
}

//! Which HTTP versions a run spoke and how many connections it opened.
//!
//! A k6 user porting a test wants to know whether the load went out over HTTP/1.1
//! or HTTP/2 and how many connections it took: a test meant for HTTP/2 that fell
//! back to HTTP/1.1, or a keep-alive that did not hold (one connection per request),
//! changes what the latency means. These are counts of the whole second, not of a
//! step: each worker adds to its [`ProtocolCounts`] where it records a request (no
//! lock, no allocation) and sends them with the second's other figures, and seconds
//! and generators add them as they add requests.

use crate::{RequestSample, WsSession};

/// The HTTP version a request went over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1 (a WebSocket session's upgrade too).
    Http1,
    /// HTTP/2 (gRPC calls too).
    Http2,
}

impl HttpVersion {
    /// The version as `summary.json` and the timeline name it: `1.1`, `2`.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::Http1 => "1.1",
            HttpVersion::Http2 => "2",
        }
    }
}

/// Whether a request (or a WebSocket session) opened the connection it went on,
/// and how: what `connections_opened` counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NewConnection {
    /// It went on a connection already open (or reached none).
    #[default]
    No,
    /// It opened a plain TCP connection.
    Plain,
    /// It opened a TCP connection and completed a TLS handshake on it.
    Tls,
}

impl NewConnection {
    /// `Tls` over TLS, `Plain` otherwise: a connection just opened.
    pub fn opened(tls: bool) -> Self {
        if tls {
            NewConnection::Tls
        } else {
            NewConnection::Plain
        }
    }
}

/// Requests by HTTP version and connections opened over some span (a worker's
/// second, a second, a run, a merged test).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProtocolCounts {
    /// Requests sent over HTTP/1.1 (WebSocket upgrades included).
    pub requests_http1: u64,
    /// Requests sent over HTTP/2 (gRPC calls included).
    pub requests_http2: u64,
    /// Connections opened that then spoke HTTP/1.1 (each WebSocket session's own).
    pub conns_http1: u64,
    /// Connections opened that then spoke HTTP/2.
    pub conns_http2: u64,
    /// Of the connections opened, those with a TLS handshake.
    pub conns_tls: u64,
}

impl ProtocolCounts {
    /// Count one request: its version, and its connection when it opened one. A
    /// request that reached no connection (its templates could not build it, no
    /// connection could be made) counts in neither. The hot path: a few adds.
    #[inline]
    pub fn record(&mut self, s: &RequestSample) {
        let Some(v) = s.http_version else {
            return;
        };
        let opened = u64::from(s.opened != NewConnection::No);
        match v {
            HttpVersion::Http1 => {
                self.requests_http1 += 1;
                self.conns_http1 += opened;
            }
            HttpVersion::Http2 => {
                self.requests_http2 += 1;
                self.conns_http2 += opened;
            }
        }
        self.conns_tls += u64::from(s.opened == NewConnection::Tls);
    }

    /// Count one WebSocket session: a connection of its own, on which its upgrade
    /// went as an HTTP/1.1 request (nothing when no connection could be made).
    pub fn record_ws(&mut self, s: &WsSession) {
        if s.opened == NewConnection::No {
            return;
        }
        self.requests_http1 += 1;
        self.conns_http1 += 1;
        self.conns_tls += u64::from(s.opened == NewConnection::Tls);
    }

    /// Add another span's counts (saturating: counts read from a file may be
    /// corrupt, and must not wrap into small plausible ones).
    pub fn merge(&mut self, o: &ProtocolCounts) {
        self.requests_http1 = self.requests_http1.saturating_add(o.requests_http1);
        self.requests_http2 = self.requests_http2.saturating_add(o.requests_http2);
        self.conns_http1 = self.conns_http1.saturating_add(o.conns_http1);
        self.conns_http2 = self.conns_http2.saturating_add(o.conns_http2);
        self.conns_tls = self.conns_tls.saturating_add(o.conns_tls);
    }

    /// Whether nothing was counted (also what a result directory written before
    /// pado counted these reads as: unknown, not zero).
    pub fn is_empty(&self) -> bool {
        *self == ProtocolCounts::default()
    }

    /// Connections opened, whatever they spoke.
    pub fn connections(&self) -> u64 {
        self.conns_http1.saturating_add(self.conns_http2)
    }

    /// Requests of a version.
    pub fn requests(&self, v: HttpVersion) -> u64 {
        match v {
            HttpVersion::Http1 => self.requests_http1,
            HttpVersion::Http2 => self.requests_http2,
        }
    }

    /// Connections opened that spoke a version.
    pub fn conns(&self, v: HttpVersion) -> u64 {
        match v {
            HttpVersion::Http1 => self.conns_http1,
            HttpVersion::Http2 => self.conns_http2,
        }
    }

    /// Whether the counts agree with each other (TLS connections among the
    /// connections): a file whose counts do not is corrupt.
    pub fn check_consistent(&self) -> Result<(), String> {
        if self.conns_tls > self.connections() {
            return Err(format!(
                "field `http`: {} TLS connections of {} opened (corrupt counters)",
                self.conns_tls,
                self.connections()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(v: Option<HttpVersion>, opened: NewConnection) -> RequestSample {
        RequestSample {
            status: 200,
            http_version: v,
            opened,
            ..Default::default()
        }
    }

    #[test]
    fn requests_count_by_version_and_connections_where_opened() {
        let mut c = ProtocolCounts::default();
        c.record(&sample(Some(HttpVersion::Http1), NewConnection::Plain));
        for _ in 0..4 {
            c.record(&sample(Some(HttpVersion::Http1), NewConnection::No));
        }
        c.record(&sample(Some(HttpVersion::Http2), NewConnection::Tls));
        c.record(&sample(Some(HttpVersion::Http2), NewConnection::No));
        // Never sent: counted in neither.
        c.record(&sample(None, NewConnection::No));
        assert_eq!((c.requests_http1, c.requests_http2), (5, 2));
        assert_eq!((c.conns_http1, c.conns_http2, c.conns_tls), (1, 1, 1));
        assert_eq!(c.connections(), 2);
        c.check_consistent().unwrap();
    }

    #[test]
    fn a_websocket_session_is_an_http1_upgrade_on_its_own_connection() {
        let mut c = ProtocolCounts::default();
        c.record_ws(&WsSession {
            opened: NewConnection::Tls,
            ..Default::default()
        });
        // Its connection could not be made: nothing went out.
        c.record_ws(&WsSession::default());
        assert_eq!((c.requests_http1, c.conns_http1, c.conns_tls), (1, 1, 1));
        assert_eq!(c.requests_http2, 0);
    }

    #[test]
    fn merges_add_and_corrupt_counts_are_refused() {
        let mut a = ProtocolCounts {
            requests_http1: 3,
            conns_http1: 1,
            ..Default::default()
        };
        a.merge(&ProtocolCounts {
            requests_http2: 7,
            conns_http2: 2,
            conns_tls: 2,
            ..Default::default()
        });
        assert_eq!(
            a,
            ProtocolCounts {
                requests_http1: 3,
                requests_http2: 7,
                conns_http1: 1,
                conns_http2: 2,
                conns_tls: 2
            }
        );
        assert!(!a.is_empty() && ProtocolCounts::default().is_empty());
        a.conns_tls = 4;
        assert!(a.check_consistent().unwrap_err().contains("corrupt"));
    }
}

//! WebSocket sessions of a step, in k6's vocabulary (`ws_sessions`, `ws_connecting`,
//! `ws_session_duration`, `ws_msgs_sent`, `ws_msgs_received`) plus pado's
//! `ws_msg_latency`. They ride in their step's [`crate::SeriesStats`] (as
//! [`crate::SeriesStats::ws`]), so they travel the same per-second intervals,
//! timeline lines, merges and totals as the HTTP figures, and stay apart from
//! `http_reqs` and `http_req_duration`: a session held for minutes is not a request.

use serde::{Deserialize, Serialize};

use crate::LatencyHistogram;

/// Why a WebSocket session failed. One category per failed session (the first
/// thing that went wrong); the names are stable strings users read in summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WsError {
    /// Connecting failed before the upgrade (refused, DNS, TLS, timeout...): the
    /// transport category's own name.
    Connect(crate::ErrorKind),
    /// The server answered the upgrade with this status instead of 101.
    HandshakeRefused(u16),
    /// The server closed the session (close frame or end of stream) before its
    /// actions were done.
    ClosedEarly,
    /// An `expect` saw no matching message in time (its check failed too).
    ExpectTimeout,
    /// The peer broke the WebSocket protocol (bad frame, bad UTF-8 in a text
    /// message, a reset mid-session).
    Protocol,
    /// A message or the URL could not be built from its templates; nothing was sent.
    Template,
    /// The server sent a message (or a frame) longer than pado keeps
    /// (`defaults.max_body`), e.g. a fragmented message that never ends.
    TooLarge,
    /// pado's own frames piled up unread (1 MiB): the server does not read what
    /// the session sends, e.g. while it floods pings whose pongs it never takes.
    Backlog,
}

impl WsError {
    /// The stable name (`ws_handshake_403`, `ws_closed_early`, `connect_refused`...).
    pub fn name(self) -> String {
        match self {
            WsError::Connect(k) => k.as_str().to_string(),
            WsError::HandshakeRefused(s) => format!("ws_handshake_{s}"),
            WsError::ClosedEarly => "ws_closed_early".into(),
            WsError::ExpectTimeout => "ws_expect_timeout".into(),
            WsError::Protocol => "ws_protocol".into(),
            WsError::Template => "template".into(),
            WsError::TooLarge => "ws_too_large".into(),
            WsError::Backlog => "ws_backlog".into(),
        }
    }
}

/// One finished WebSocket session, as the engine measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WsSession {
    /// From the start of the connect to the server's 101 (TCP, TLS and the
    /// upgrade): `ws_connecting`. 0 when the handshake did not complete.
    pub connecting_us: u64,
    /// From the start of the connect to the end of the close: `ws_session_duration`.
    pub duration_us: u64,
    /// Messages written (`ws_msgs_sent`).
    pub msgs_sent: u64,
    /// Data messages read, text or binary (`ws_msgs_received`).
    pub msgs_received: u64,
    /// Why it failed, if it did.
    pub error: Option<WsError>,
    /// Whether the handshake completed (only those add to `ws_connecting`).
    pub connected: bool,
    /// The session's own connection, when it could be made (its upgrade then went
    /// out as an HTTP/1.1 request): what `connections_opened` counts.
    pub opened: crate::protocols::NewConnection,
}

/// The WebSocket figures of one step over some span.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WsStats {
    /// Sessions ended, successful or not (`ws_sessions`).
    pub sessions: u64,
    /// Of them, failed.
    pub failed: u64,
    /// Messages written (`ws_msgs_sent`).
    pub msgs_sent: u64,
    /// Data messages read (`ws_msgs_received`).
    pub msgs_received: u64,
    /// Failed sessions by [`WsError::name`], sorted by name.
    pub errors: Vec<(String, u64)>,
    /// `ws_connecting` (µs), one value per completed handshake.
    pub connecting: LatencyHistogram,
    /// `ws_session_duration` (µs), one value per session.
    pub session: LatencyHistogram,
    /// `ws_msg_latency` (µs): from a `send` to the message the next `expect`
    /// matched, one value per matched `expect` that had a `send` before it.
    pub msg_latency: LatencyHistogram,
}

impl WsStats {
    /// Add one session.
    pub fn record(&mut self, s: &WsSession) {
        self.sessions += 1;
        self.msgs_sent += s.msgs_sent;
        self.msgs_received += s.msgs_received;
        if let Some(e) = s.error {
            self.failed += 1;
            self.bump_error(&e.name(), 1);
        }
        if s.connected {
            self.connecting.record(s.connecting_us);
        }
        self.session.record(s.duration_us);
    }

    /// Count `n` failures of category `name`.
    pub fn bump_error(&mut self, name: &str, n: u64) {
        match self.errors.binary_search_by(|(k, _)| k.as_str().cmp(name)) {
            Ok(i) => self.errors[i].1 = self.errors[i].1.saturating_add(n),
            Err(i) => self.errors.insert(i, (name.to_string(), n)),
        }
    }

    /// Add another span's figures (saturating, as the series counters).
    pub fn merge(&mut self, o: &WsStats) {
        self.sessions = self.sessions.saturating_add(o.sessions);
        self.failed = self.failed.saturating_add(o.failed);
        self.msgs_sent = self.msgs_sent.saturating_add(o.msgs_sent);
        self.msgs_received = self.msgs_received.saturating_add(o.msgs_received);
        for (k, n) in &o.errors {
            self.bump_error(k, *n);
        }
        self.connecting.add(&o.connecting);
        self.session.add(&o.session);
        self.msg_latency.add(&o.msg_latency);
    }

    /// Whether the counters agree (failures among sessions, failures by category
    /// adding up): a file whose counts do not is corrupt.
    pub fn check_consistent(&self) -> Result<(), String> {
        let by_kind = self
            .errors
            .iter()
            .try_fold(0u64, |a, (_, n)| a.checked_add(*n));
        if self.failed > self.sessions || by_kind != Some(self.failed) {
            return Err(format!(
                "WebSocket sessions: {} failed of {} but categories add up to {:?} (corrupt counters)",
                self.failed, self.sessions, by_kind
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_add_up_exactly_and_errors_by_category() {
        let mut a = WsStats::default();
        for i in 0..10u64 {
            a.record(&WsSession {
                connecting_us: 1000 + i,
                duration_us: 50_000,
                msgs_sent: 3,
                msgs_received: 2,
                error: None,
                connected: true,
                ..Default::default()
            });
        }
        let mut b = WsStats::default();
        b.record(&WsSession {
            error: Some(WsError::HandshakeRefused(403)),
            duration_us: 10,
            ..Default::default()
        });
        b.record(&WsSession {
            error: Some(WsError::ClosedEarly),
            connected: true,
            msgs_sent: 1,
            ..Default::default()
        });
        a.merge(&b);
        assert_eq!((a.sessions, a.failed), (12, 2));
        assert_eq!((a.msgs_sent, a.msgs_received), (31, 20));
        assert_eq!(
            a.errors,
            vec![
                ("ws_closed_early".to_string(), 1),
                ("ws_handshake_403".to_string(), 1)
            ]
        );
        // Only completed handshakes are timed.
        assert_eq!(a.connecting.count(), 11);
        assert_eq!(a.session.count(), 12);
        a.check_consistent().unwrap();
        a.failed = 3;
        assert!(a.check_consistent().is_err());
    }
}

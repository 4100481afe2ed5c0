//! Why a request failed at the transport level. HTTP statuses are not here: a
//! response with status 500 is a successful exchange that the expectation marks failed.

use serde::{Deserialize, Serialize};

/// The category a transport failure is counted under. Users read these names in the
/// summary (`errors` in `summary.json`), so they are stable strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Nobody listens at the address (ECONNREFUSED).
    ConnectRefused,
    /// The TCP connection could not be made within the timeout.
    ConnectTimeout,
    /// The host name did not resolve.
    Dns,
    /// The whole exchange took longer than the request timeout.
    Timeout,
    /// The peer reset or closed the connection before the response was complete.
    Reset,
    /// The response was not valid HTTP/1.1 (garbage, bad framing, oversized head),
    /// or, over HTTP/2, the connection broke the protocol (a frame out of place, a
    /// bad header block: h2's connection error, its code in the failure's reason).
    Protocol,
    /// The TLS handshake or record layer failed (bad certificate, wrong protocol...).
    Tls,
    /// Any other I/O failure of the local system (e.g. out of file descriptors).
    Io,
    /// A redirect chain went past the most redirects followed (10, as k6's
    /// `maxRedirects`): the last 3xx response is the request's failure.
    TooManyRedirects,
    /// A redirect could not be followed: its `Location` is not a URL, or leads to a
    /// scheme other than http and https.
    BadRedirect,
    /// The request could not be built from its templates, so nothing was sent: a
    /// typed JSON value (`{{ n | int }}`) that is not of its type, or a URL that starts
    /// with a hole whose value is not a path (an extracted `Location` that is missing
    /// or points elsewhere). The failure sample's `reason` says which and what it was.
    /// Counted as a failed request, but not in the latency histograms: it had none.
    Template,
    /// HTTP/2: the server reset the request's stream (`RST_STREAM`) before the
    /// response was complete; the failure sample's reason names the code
    /// (`REFUSED_STREAM`, `CANCEL`, `INTERNAL_ERROR`...).
    StreamReset,
    /// HTTP/2: the server sent `GOAWAY` and this request was refused (its stream
    /// past the last one the server processes) or lost with the connection. The
    /// connection is replaced by a new one for the requests after it.
    #[serde(rename = "goaway")]
    GoAway,
    /// HTTP/2 was required (`http: "2"`, `--http2`) but the server chose another
    /// protocol in TLS's ALPN (or none): nothing was sent.
    H2NotNegotiated,
    /// gRPC: the call ended with `UNAVAILABLE` (14), the server down, overloaded
    /// or draining, and the step did not accept it (`check.grpc_status`).
    GrpcUnavailable,
    /// gRPC: `DEADLINE_EXCEEDED` (4): the server gave up at the call's
    /// `grpc-timeout`. (pado's own deadline passing first is `timeout`.)
    GrpcDeadlineExceeded,
    /// gRPC: `RESOURCE_EXHAUSTED` (8): rate limited or out of a quota.
    GrpcResourceExhausted,
    /// gRPC: a server fault, `INTERNAL` (13), `UNKNOWN` (2) or `DATA_LOSS` (15).
    GrpcInternal,
    /// gRPC: `UNIMPLEMENTED` (12): the server does not have the method.
    GrpcUnimplemented,
    /// gRPC: any other status the step did not accept (`NOT_FOUND`,
    /// `INVALID_ARGUMENT`, `PERMISSION_DENIED`, `UNAUTHENTICATED`...); the failure
    /// sample's reason names the code.
    GrpcStatus,
    /// The HTTP proxy would not open a tunnel to the target: it refused `CONNECT`
    /// (407 wants credentials, 403 forbids, 502 could not reach the target...) or
    /// did not answer it as HTTP. The failure sample's reason says which.
    Proxy,
    /// The response's `Content-Encoding` (gzip, br, zstd, deflate) could not be
    /// decoded: a corrupt or truncated body, or one that decodes to more than the
    /// decoded-size cap (a decompression bomb).
    Decode,
    /// The server sent a response head larger than pado reads (64 KiB, as the
    /// HTTP/1.1 head cap): an HTTP/1.1 status line and headers, or an HTTP/2 header
    /// list, including one spread over a flood of `CONTINUATION` frames. A broken or
    /// hostile server; pado stops reading it rather than growing its memory.
    TooLarge,
    /// HTTP/2 over cleartext (h2c, `--http2` on an `http://` target) was required,
    /// but the server answered the HTTP/2 preface in HTTP/1.1 (its first bytes
    /// `HTTP/1.`): it does not speak h2c. Counted apart from `goaway` and
    /// `protocol`, which the same bytes would otherwise look like (a "frame" of
    /// 4.7 MB, `FRAME_SIZE_ERROR`), so the cause and the fix (`--http auto`, or
    /// https) are named.
    H2cUnsupported,
    /// A Server-Sent Events stream (`sse:` steps) ended in the middle of an event
    /// (a partial line, or fields never closed by their blank line) or was cut
    /// before its stop condition: the answer the user waited for is incomplete,
    /// which a plain `reset` would not say.
    SseTruncated,
}

impl ErrorKind {
    /// Every kind, in a fixed order, so counters can live in a plain array.
    pub const ALL: [ErrorKind; 25] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Dns,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Protocol,
        ErrorKind::Tls,
        ErrorKind::Io,
        ErrorKind::TooManyRedirects,
        ErrorKind::BadRedirect,
        ErrorKind::Template,
        ErrorKind::StreamReset,
        ErrorKind::GoAway,
        ErrorKind::H2NotNegotiated,
        ErrorKind::GrpcUnavailable,
        ErrorKind::GrpcDeadlineExceeded,
        ErrorKind::GrpcResourceExhausted,
        ErrorKind::GrpcInternal,
        ErrorKind::GrpcUnimplemented,
        ErrorKind::GrpcStatus,
        ErrorKind::Proxy,
        ErrorKind::Decode,
        ErrorKind::TooLarge,
        ErrorKind::H2cUnsupported,
        ErrorKind::SseTruncated,
    ];

    /// The stable name used in summaries and result files.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Dns => "dns",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Tls => "tls",
            ErrorKind::Io => "io",
            ErrorKind::TooManyRedirects => "too_many_redirects",
            ErrorKind::BadRedirect => "bad_redirect",
            ErrorKind::Template => "template",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::GoAway => "goaway",
            ErrorKind::H2NotNegotiated => "h2_not_negotiated",
            ErrorKind::Proxy => "proxy",
            ErrorKind::Decode => "decode",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::H2cUnsupported => "h2c_unsupported",
            ErrorKind::SseTruncated => "sse_truncated",
            ErrorKind::GrpcUnavailable => "grpc_unavailable",
            ErrorKind::GrpcDeadlineExceeded => "grpc_deadline_exceeded",
            ErrorKind::GrpcResourceExhausted => "grpc_resource_exhausted",
            ErrorKind::GrpcInternal => "grpc_internal",
            ErrorKind::GrpcUnimplemented => "grpc_unimplemented",
            ErrorKind::GrpcStatus => "grpc_status",
        }
    }

    /// The category of a gRPC status code the step did not accept (never `OK`'s).
    pub fn of_grpc_code(code: u16) -> ErrorKind {
        match code {
            14 => ErrorKind::GrpcUnavailable,
            4 => ErrorKind::GrpcDeadlineExceeded,
            8 => ErrorKind::GrpcResourceExhausted,
            2 | 13 | 15 => ErrorKind::GrpcInternal,
            12 => ErrorKind::GrpcUnimplemented,
            _ => ErrorKind::GrpcStatus,
        }
    }

    /// Index into [`ErrorKind::ALL`]-shaped counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_matches_position_in_all() {
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
    }

    #[test]
    fn grpc_codes_fall_into_their_families() {
        assert_eq!(ErrorKind::of_grpc_code(14), ErrorKind::GrpcUnavailable);
        assert_eq!(ErrorKind::of_grpc_code(4), ErrorKind::GrpcDeadlineExceeded);
        assert_eq!(ErrorKind::of_grpc_code(8), ErrorKind::GrpcResourceExhausted);
        for c in [2, 13, 15] {
            assert_eq!(ErrorKind::of_grpc_code(c), ErrorKind::GrpcInternal);
        }
        assert_eq!(ErrorKind::of_grpc_code(12), ErrorKind::GrpcUnimplemented);
        for c in [1, 3, 5, 6, 7, 9, 10, 11, 16] {
            assert_eq!(ErrorKind::of_grpc_code(c), ErrorKind::GrpcStatus);
        }
    }

    #[test]
    fn serde_name_is_as_str() {
        for k in ErrorKind::ALL {
            let s = serde_json::to_string(&k).unwrap();
            assert_eq!(s, format!("\"{}\"", k.as_str()));
        }
    }
}

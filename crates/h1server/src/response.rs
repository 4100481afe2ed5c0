//! Writing responses: the status line with its reason phrase from one table, headers
//! in the order the server adds them, and a body framed by `Content-Length` or
//! chunked. A head is built in one buffer and written with its body in one write, so
//! a small response is one segment on the wire.

use std::fmt::Display;
use std::io::{self, Write as _};

use tokio::io::{AsyncWrite, AsyncWriteExt};

/// The reason phrase of `status` (RFC 9110 §15), for the status line and for error
/// bodies that name the status. One table for every server, so a status reads the
/// same whichever one sent it; a code it does not know gets `Unknown`.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        422 => "Unprocessable Content",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// The `Connection` header value a response needs after a request with this
/// keep-alive wish and version, if any: `close` when the connection ends after it,
/// `keep-alive` for an HTTP/1.0 client that asked to keep it (1.0 closes by default),
/// nothing for HTTP/1.1 keep-alive (the default).
pub fn connection_value(keep_alive: bool, version: u8) -> Option<&'static str> {
    if !keep_alive {
        Some("close")
    } else if version == 0 {
        Some("keep-alive")
    } else {
        None
    }
}

/// A response head being built: the status line first, then headers in the order
/// added, in one buffer that [`Head::finish`] ends with the blank line. The caller
/// chooses the framing headers ([`Head::content_length`] or [`Head::chunked`]) because
/// some responses (204, 304, the test server's deliberately wrong ones) need their own.
///
/// Header names are case-insensitive, but each server keeps the spelling its clients
/// and tests have always seen: the names this builder writes itself come in
/// `Content-Length` form ([`Head::new`]) or all lowercase ([`Head::lowercase`]).
#[derive(Debug)]
pub struct Head {
    buf: Vec<u8>,
    lowercase: bool,
}

impl Head {
    /// A head with the status line `HTTP/1.1 {status} {reason}`; the names the
    /// builder writes are capitalized (`Content-Length`, `Connection`).
    pub fn new(status: u16) -> Head {
        Head::with_case(status, false)
    }

    /// Like [`Head::new`], but the names the builder writes are lowercase
    /// (`content-length`, `connection`), as the demo target has always sent them.
    pub fn lowercase(status: u16) -> Head {
        Head::with_case(status, true)
    }

    fn with_case(status: u16, lowercase: bool) -> Head {
        let mut buf = Vec::with_capacity(256);
        let _ = write!(buf, "HTTP/1.1 {status} {}\r\n", reason(status));
        Head { buf, lowercase }
    }

    /// `name` (given capitalized) as this head spells the names it writes.
    fn own(&self, name: &'static str) -> &'static str {
        match (self.lowercase, name) {
            (false, _) => name,
            (true, "Content-Length") => "content-length",
            (true, "Transfer-Encoding") => "transfer-encoding",
            (true, "Connection") => "connection",
            (true, other) => other,
        }
    }

    /// Adds `name: value`.
    pub fn header(&mut self, name: &str, value: impl Display) -> &mut Head {
        let _ = write!(self.buf, "{name}: {value}\r\n");
        self
    }

    /// Adds `Content-Length: len`.
    pub fn content_length(&mut self, len: u64) -> &mut Head {
        self.header(self.own("Content-Length"), len)
    }

    /// Adds `Transfer-Encoding: chunked`; write the body with [`write_chunk`] and end
    /// it with [`LAST_CHUNK`].
    pub fn chunked(&mut self) -> &mut Head {
        self.header(self.own("Transfer-Encoding"), "chunked")
    }

    /// Adds `Connection: {value}` when there is one (see [`connection_value`]).
    pub fn connection(&mut self, value: Option<&str>) -> &mut Head {
        if let Some(v) = value {
            self.header(self.own("Connection"), v);
        }
        self
    }

    /// The head's bytes, blank line included; a body may be appended to them.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.extend_from_slice(b"\r\n");
        self.buf
    }
}

/// Writes `head` and, unless `head_only` (the answer to HEAD, which has the headers
/// of the body but not the body), `body`, in one write, and flushes.
pub async fn write_response<S: AsyncWrite + Unpin>(
    s: &mut S,
    head: Head,
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let mut out = head.finish();
    if !head_only {
        out.extend_from_slice(body);
    }
    s.write_all(&out).await?;
    s.flush().await
}

/// The chunk that ends a chunked body (no trailers).
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Appends `data` to `out` as one chunk (`{len:x}\r\n{data}\r\n`). Empty data appends
/// nothing: an empty chunk would end the body, which is [`LAST_CHUNK`]'s job.
pub fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    let _ = write!(out, "{:x}\r\n", data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_in_order_with_reason() {
        let mut h = Head::new(413);
        h.header("Content-Type", "text/plain")
            .content_length(3)
            .connection(connection_value(false, 1));
        assert_eq!(
            h.finish(),
            b"HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain\r\n\
              Content-Length: 3\r\nConnection: close\r\n\r\n"
        );
        let h = Head::new(799);
        assert_eq!(h.finish(), b"HTTP/1.1 799 Unknown\r\n\r\n");
        let mut h = Head::lowercase(200);
        h.header("content-type", "a/b")
            .content_length(0)
            .chunked()
            .connection(Some("keep-alive"));
        assert_eq!(
            h.finish(),
            b"HTTP/1.1 200 OK\r\ncontent-type: a/b\r\ncontent-length: 0\r\n\
              transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
        );
    }

    #[test]
    fn connection_header_by_version() {
        assert_eq!(connection_value(true, 1), None);
        assert_eq!(connection_value(true, 0), Some("keep-alive"));
        assert_eq!(connection_value(false, 0), Some("close"));
        assert_eq!(connection_value(false, 1), Some("close"));
    }

    #[test]
    fn chunks() {
        let mut out = Vec::new();
        write_chunk(&mut out, b"hello world, 17 b");
        write_chunk(&mut out, b"");
        out.extend_from_slice(LAST_CHUNK);
        assert_eq!(out, b"11\r\nhello world, 17 b\r\n0\r\n\r\n");
    }

    #[test]
    fn head_only_writes_no_body() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut out: Vec<u8> = Vec::new();
        let mut h = Head::new(200);
        h.content_length(2);
        rt.block_on(write_response(&mut out, h, b"ok", true))
            .unwrap();
        assert_eq!(out, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n");
    }
}

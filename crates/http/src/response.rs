//! Sans-I/O HTTP/1.1 response framing: where the head ends, how the body is delimited,
//! and chunked decoding. Kept apart from sockets so every edge case (1xx, HEAD, 204,
//! 304, chunked with extensions and trailers, Connection: close, HTTP/1.0) is tested
//! on byte strings.

/// How the body after a head is delimited (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// No body (HEAD, 1xx, 204, 304).
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Everything until the server closes the connection.
    UntilClose,
}

/// A parsed final response head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Status code.
    pub status: u16,
    /// Bytes the head took in the buffer (including interim 1xx heads before it).
    pub len: usize,
    /// Body framing.
    pub body: BodyKind,
    /// Whether the connection may be reused after the body.
    pub keep_alive: bool,
    /// Where the final head starts (after skipped 1xx heads).
    pub start: usize,
    /// Whether it sets a cookie (so the cookie jar needs the head).
    pub has_set_cookie: bool,
    /// The body's `Content-Encoding`, when it is one pado decodes.
    pub coding: Option<crate::decode::Coding>,
}

/// Why a response is not valid HTTP/1.1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// httparse rejected the head.
    #[error("malformed response head: {0}")]
    Head(&'static str),
    /// The head is larger than pado accepts.
    #[error("response head larger than {0} bytes")]
    HeadTooLarge(usize),
    /// Content-Length is not a number or appears twice with different values.
    #[error("invalid Content-Length")]
    ContentLength,
    /// A chunk size line is malformed.
    #[error("malformed chunk")]
    Chunk,
    /// More header fields than pado accepts.
    #[error("too many header fields")]
    TooManyHeaders,
}

/// Largest head pado reads before giving up.
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 96;

/// Try to parse a final response head at the start of `buf`. Interim 1xx responses
/// (other than 101) are skipped. `Ok(None)` means more bytes are needed.
pub fn parse_head(buf: &[u8], request_was_head: bool) -> Result<Option<Head>, ProtocolError> {
    let mut offset = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(&buf[offset..]) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if buf.len() - offset > MAX_HEAD {
                    return Err(ProtocolError::HeadTooLarge(MAX_HEAD));
                }
                return Ok(None);
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ProtocolError::TooManyHeaders),
            Err(e) => return Err(ProtocolError::Head(error_text(e))),
        };
        let status = resp.code.unwrap_or(0);
        if (100..200).contains(&status) && status != 101 {
            offset += n;
            continue;
        }
        let version = resp.version.unwrap_or(1);
        let mut content_length: Option<u64> = None;
        let mut chunked = false;
        let mut conn_close = false;
        let mut conn_keep_alive = false;
        let mut has_set_cookie = false;
        let mut coding = None;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .ok_or(ProtocolError::ContentLength)?;
                if content_length.is_some_and(|c| c != v) {
                    return Err(ProtocolError::ContentLength);
                }
                content_length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                // The final coding decides; anything ending in chunked is chunked.
                chunked = h
                    .value
                    .rsplit(|b| *b == b',')
                    .next()
                    .is_some_and(|last| trim(last).eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("set-cookie") {
                has_set_cookie = true;
            } else if h.name.eq_ignore_ascii_case("content-encoding") {
                coding = crate::decode::Coding::of_header(h.value);
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|b| *b == b',') {
                    let t = trim(token);
                    if t.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") {
                        conn_keep_alive = true;
                    }
                }
            }
        }
        let mut keep_alive = if version == 0 {
            conn_keep_alive && !conn_close
        } else {
            !conn_close
        };
        let body = if request_was_head || status == 204 || status == 304 || status == 101 {
            BodyKind::None
        } else if chunked {
            BodyKind::Chunked
        } else if let Some(n) = content_length {
            BodyKind::Length(n)
        } else {
            keep_alive = false;
            BodyKind::UntilClose
        };
        if status == 101 {
            keep_alive = false;
        }
        return Ok(Some(Head {
            status,
            len: offset + n,
            body,
            coding,
            keep_alive,
            start: offset,
            has_set_cookie,
        }));
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let s = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let e = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(s, |i| i + 1);
    &b[s..e.max(s)]
}

fn error_text(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid line ending",
        httparse::Error::Status => "invalid status line",
        httparse::Error::Token => "invalid token",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "not an HTTP/1.x response",
    }
}

/// Incremental decoder of a chunked body.
#[derive(Clone, Debug, Default)]
pub struct ChunkedDecoder {
    state: ChunkState,
    line: Vec<u8>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

impl ChunkedDecoder {
    /// A decoder at the start of a body.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the terminating chunk and trailers have been read.
    pub fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Feed bytes; payload bytes are passed to `sink`. Returns how many input bytes
    /// were consumed (less than `input.len()` only when the body ended).
    pub fn feed(
        &mut self,
        input: &[u8],
        mut sink: impl FnMut(&[u8]),
    ) -> Result<usize, ProtocolError> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                ChunkState::Size | ChunkState::Trailer | ChunkState::DataEnd => {
                    // Collect one line.
                    match memchr::memchr(b'\n', &input[i..]) {
                        None => {
                            self.line.extend_from_slice(&input[i..]);
                            if self.line.len() > 4096 {
                                return Err(ProtocolError::Chunk);
                            }
                            i = input.len();
                        }
                        Some(p) if self.line.is_empty() => {
                            // The whole line is in this piece (as a rule: a
                            // streamed body's every chunk has its size line and
                            // the CRLF after its data): read where it lies.
                            self.state = end_line(self.state, &input[i..i + p + 1])?;
                            i += p + 1;
                            if self.state == ChunkState::Done {
                                return Ok(i);
                            }
                        }
                        Some(p) => {
                            self.line.extend_from_slice(&input[i..i + p + 1]);
                            i += p + 1;
                            self.state = end_line(self.state, &self.line)?;
                            self.line.clear();
                            if self.state == ChunkState::Done {
                                return Ok(i);
                            }
                        }
                    }
                }
                ChunkState::Data(left) => {
                    let take = (input.len() - i).min(left.min(usize::MAX as u64) as usize);
                    sink(&input[i..i + take]);
                    i += take;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left)
                    };
                }
                ChunkState::Done => return Ok(i),
            }
        }
        Ok(i)
    }
}

/// The state after `line` (a whole line, its LF included) read in `state`: a
/// chunk's size, the CRLF after its data, or a trailer line.
fn end_line(state: ChunkState, line: &[u8]) -> Result<ChunkState, ProtocolError> {
    Ok(match state {
        ChunkState::Size => {
            let size = match httparse::parse_chunk_size(line) {
                Ok(httparse::Status::Complete((_, n))) => n,
                _ => return Err(ProtocolError::Chunk),
            };
            if size == 0 {
                ChunkState::Trailer
            } else {
                ChunkState::Data(size)
            }
        }
        ChunkState::DataEnd if trim(line).is_empty() => ChunkState::Size,
        ChunkState::DataEnd => return Err(ProtocolError::Chunk),
        ChunkState::Trailer if trim(line).is_empty() => ChunkState::Done,
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str, head_req: bool) -> Head {
        parse_head(s.as_bytes(), head_req).unwrap().unwrap()
    }

    #[test]
    fn content_length_and_keep_alive() {
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc", false);
        assert_eq!(h.status, 200);
        assert_eq!(h.body, BodyKind::Length(3));
        assert!(h.keep_alive);
        assert_eq!(h.len, 38);
    }

    #[test]
    fn partial_head_needs_more() {
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false).unwrap(),
            None
        );
    }

    #[test]
    fn connection_close_and_http10() {
        let h = head(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        );
        assert!(!h.keep_alive);
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false);
        assert!(!h.keep_alive);
        let h = head(
            "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
            false,
        );
        assert!(h.keep_alive);
    }

    #[test]
    fn bodiless_responses() {
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", true).body,
            BodyKind::None
        );
        assert_eq!(
            head("HTTP/1.1 204 No Content\r\n\r\n", false).body,
            BodyKind::None
        );
        let h = head(
            "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n",
            false,
        );
        assert_eq!(h.body, BodyKind::None);
        assert!(h.keep_alive);
    }

    #[test]
    fn interim_responses_are_skipped() {
        let s = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        let h = head(s, false);
        assert_eq!(h.status, 201);
        assert_eq!(&s.as_bytes()[h.len..], b"ok");
        // Interim head complete but final head not yet: need more.
        assert_eq!(
            parse_head(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2", false).unwrap(),
            None
        );
    }

    #[test]
    fn chunked_wins_over_length_and_until_close() {
        let h = head(
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            false,
        );
        assert_eq!(h.body, BodyKind::Chunked);
        let h = head("HTTP/1.1 200 OK\r\n\r\n", false);
        assert_eq!(h.body, BodyKind::UntilClose);
        assert!(!h.keep_alive);
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        assert!(parse_head(b"this is not http\r\n\r\n", false).is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false).is_err());
        assert!(parse_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            false
        )
        .is_err());
        let big = format!("HTTP/1.1 200 OK\r\nX: {}", "a".repeat(MAX_HEAD + 10));
        assert_eq!(
            parse_head(big.as_bytes(), false),
            Err(ProtocolError::HeadTooLarge(MAX_HEAD))
        );
    }

    #[test]
    fn chunked_decoding_byte_by_byte() {
        let body = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\nNEXT";
        for split in [1usize, 2, 3, 7, 1000] {
            let mut d = ChunkedDecoder::new();
            let mut out = Vec::new();
            let mut consumed = 0;
            for piece in body.chunks(split) {
                if d.is_done() {
                    break;
                }
                consumed += d.feed(piece, |b| out.extend_from_slice(b)).unwrap();
            }
            assert!(d.is_done());
            assert_eq!(out, b"Wikipedia in\r\n\r\nchunks.");
            assert_eq!(&body[consumed..], b"NEXT", "split {split}");
        }
    }

    #[test]
    fn bad_chunks_error() {
        let mut d = ChunkedDecoder::new();
        assert!(d.feed(b"zz\r\n", |_| {}).is_err());
        let mut d = ChunkedDecoder::new();
        assert!(d.feed(b"2\r\nabXY\r\n", |_| {}).is_err());
    }
}

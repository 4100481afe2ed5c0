//! Reading requests: keep-alive, pipelining, Content-Length and chunked bodies,
//! `Expect: 100-continue`, malformed input answered with a status instead of failing,
//! and the helpers (percent-decoding, query strings) both servers need.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

/// The largest request head we accept; a longer head is answered with `400`.
pub const MAX_HEAD: usize = 64 * 1024;
/// The default largest request body (`413` above): bodies are kept in memory, so
/// they must be bounded; each server passes its own limit to [`read_request`].
pub const MAX_BODY: u64 = 64 * 1024 * 1024;
/// How many header lines a request may have.
const MAX_HEADERS: usize = 128;
/// How long a chunk-size line (with extensions) or a trailer section may get.
const MAX_CHUNK_LINE: usize = 4096;

/// One fully read request: head and (de-chunked) body.
#[derive(Debug)]
pub struct Request {
    /// The method as sent (`GET`, `POST`, ...).
    pub method: String,
    /// The raw request-target, exactly as sent.
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    /// The headers in order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked when it was sent chunked.
    pub body: Vec<u8>,
    /// Percent-decoded path (no query), UTF-8 lossy.
    pub path: String,
    /// Percent-decoded query pairs (`+` is a space).
    pub query: Vec<(String, String)>,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
    /// How many bytes this request took on the wire (head + body framing).
    pub wire_len: u64,
}

impl Request {
    /// A request made in the process instead of read off a socket (a gate or an
    /// answer called directly, a service calling its own routes): HTTP/1.1,
    /// keep-alive, no body, no wire bytes, and `path`/`query` split from `target`
    /// just as for a request that was read.
    pub fn in_process(method: &str, target: &str, headers: &[(&str, &str)]) -> Request {
        let (path, query) = split_target(target);
        Request {
            method: method.into(),
            target: target.into(),
            version: 1,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
            path,
            query,
            keep_alive: true,
            wire_len: 0,
        }
    }

    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first query parameter with this name.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `true` for HEAD: the response gets headers but no body.
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The bytes are not a request we can frame: answer with this status and close.
    Malformed(u16, &'static str),
    /// The connection broke, ended in the middle of a request, or went silent past
    /// the reader's time limit: just close.
    Io,
}

/// Reads more bytes from `s` into the end of `buf`. Returns how many (0 = EOF).
/// With a deadline, a peer still silent at it is treated as a broken connection
/// ([`ReadError::Io`]): a server that strangers reach must not wait forever.
pub(crate) async fn fill<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    deadline: Option<Instant>,
) -> Result<usize, ReadError> {
    buf.reserve(16 * 1024);
    match deadline {
        None => s.read_buf(buf).await.map_err(|_| ReadError::Io),
        Some(at) => match tokio::time::timeout_at(at, s.read_buf(buf)).await {
            Ok(r) => r.map_err(|_| ReadError::Io),
            Err(_) => Err(ReadError::Io),
        },
    }
}

/// How long reading may wait: the whole head by one deadline, each read of the body
/// by a stall limit of its own (a large body on a slow link may take long, but it
/// must keep moving). `None`: no limit (the caller bounds the connection itself).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Waits {
    pub head_by: Option<Instant>,
    pub body_stall: Option<Duration>,
}

impl Waits {
    fn body_deadline(&self) -> Option<Instant> {
        self.body_stall.map(|d| Instant::now() + d)
    }
}

/// Reads one request from the connection. `buf` holds bytes already received
/// (e.g. a pipelined request) and keeps whatever follows this request.
///
/// Returns `Ok(None)` on a clean EOF between requests.
pub async fn read_request<S>(
    s: &mut S,
    buf: &mut Vec<u8>,
    max_body: u64,
) -> Result<Option<Request>, ReadError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let waits = Waits::default();
    let Some((req, head_len)) = read_head(s, buf, &waits).await? else {
        return Ok(None);
    };
    read_body(s, buf, req, head_len, max_body, &waits)
        .await
        .map(Some)
}

/// Reads a request head (and removes it from `buf`): the request without its body,
/// and the head's length on the wire. `Ok(None)` on a clean EOF between requests.
pub(crate) async fn read_head<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    waits: &Waits,
) -> Result<Option<(Request, usize)>, ReadError> {
    let (req, head_len) = loop {
        if !buf.is_empty() {
            if let Some(parsed) = parse_head(buf)? {
                break parsed;
            }
            if buf.len() > MAX_HEAD {
                return Err(ReadError::Malformed(431, "request head too large"));
            }
        }
        if fill(s, buf, waits.head_by).await? == 0 {
            // EOF: clean between requests (only stray blank lines left), otherwise truncated.
            if buf.iter().all(|b| *b == b'\r' || *b == b'\n') {
                return Ok(None);
            }
            return Err(ReadError::Io);
        }
    };
    buf.drain(..head_len);
    Ok(Some((req, head_len)))
}

/// Reads the body `req`'s head announces (answering `Expect: 100-continue` first),
/// bounded by `max_body`.
pub(crate) async fn read_body<S>(
    s: &mut S,
    buf: &mut Vec<u8>,
    mut req: Request,
    head_len: usize,
    max_body: u64,
    waits: &Waits,
) -> Result<Request, ReadError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let framing = body_framing(&req.headers)?;
    let expects_body = !matches!(framing, Framing::Length(0));
    if expects_body && buf.is_empty() && req.version == 1 {
        let expect = req
            .header("expect")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"));
        if expect {
            // The client waits for this before sending the body.
            let _ = s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await;
            let _ = s.flush().await;
        }
    }
    let body_wire = match framing {
        Framing::Length(len) => {
            if len > max_body {
                return Err(ReadError::Malformed(413, "request body too large"));
            }
            // Safe: len <= max_body, which the caller keeps within memory.
            let len = len as usize;
            while buf.len() < len {
                if fill(s, buf, waits.body_deadline()).await? == 0 {
                    return Err(ReadError::Io);
                }
            }
            req.body = buf.drain(..len).collect();
            len
        }
        Framing::Chunked => {
            let (body, used) = read_chunked(s, buf, max_body, waits).await?;
            req.body = body;
            used
        }
    };
    req.wire_len = (head_len + body_wire) as u64;
    Ok(req)
}

/// Parses the request head at the start of `buf`; `Ok(None)` if incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<(Request, usize)>, ReadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let head_len = match parsed.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ReadError::Malformed(431, "too many headers"))
        }
        Err(_) => return Err(ReadError::Malformed(400, "malformed request")),
    };
    let method = parsed.method.unwrap_or("GET").to_string();
    let target = parsed.path.unwrap_or("/").to_string();
    let version = parsed.version.unwrap_or(1);
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).trim().to_string(),
            )
        })
        .collect();
    let keep_alive = keep_alive(version, &headers);
    let (path, query) = split_target(&target);
    Ok(Some((
        Request {
            method,
            target,
            version,
            headers,
            body: Vec::new(),
            path,
            query,
            keep_alive,
            wire_len: 0,
        },
        head_len,
    )))
}

/// HTTP/1.1 keeps the connection unless `Connection: close`; HTTP/1.0 closes
/// unless `Connection: keep-alive`.
fn keep_alive(version: u8, headers: &[(String, String)]) -> bool {
    let has_token = |token: &str| {
        headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if version == 0 {
        has_token("keep-alive") && !has_token("close")
    } else {
        !has_token("close")
    }
}

/// How a request's body is delimited.
pub(crate) enum Framing {
    /// `Content-Length` bytes (0 without the header).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// How the request body is delimited (RFC 9112 §6.3, for requests).
pub(crate) fn body_framing(headers: &[(String, String)]) -> Result<Framing, ReadError> {
    let mut te_chunked = None;
    let mut length: Option<u64> = None;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("transfer-encoding") {
            let last = value.rsplit(',').next().unwrap_or("").trim();
            te_chunked = Some(last.eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("content-length") {
            for part in value.split(',') {
                let part = part.trim();
                if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(ReadError::Malformed(400, "bad content-length"));
                }
                let n: u64 = part
                    .parse()
                    .map_err(|_| ReadError::Malformed(400, "bad content-length"))?;
                if length.is_some_and(|l| l != n) {
                    return Err(ReadError::Malformed(400, "conflicting content-length"));
                }
                length = Some(n);
            }
        }
    }
    match te_chunked {
        Some(true) => Ok(Framing::Chunked),
        Some(false) => Err(ReadError::Malformed(400, "unsupported transfer-encoding")),
        None => Ok(Framing::Length(length.unwrap_or(0))),
    }
}

/// Reads a chunked body from `buf` (filling it from `s` as needed), removes
/// its bytes from `buf` and returns the decoded body and its wire length.
async fn read_chunked<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    max_body: u64,
    waits: &Waits,
) -> Result<(Vec<u8>, usize), ReadError> {
    let mut body = Vec::new();
    let mut pos = 0usize;
    loop {
        // chunk-size line
        let (line_len, size) = loop {
            match httparse::parse_chunk_size(&buf[pos..]) {
                Ok(httparse::Status::Complete(v)) => break v,
                Ok(httparse::Status::Partial) => {
                    if buf.len() - pos > MAX_CHUNK_LINE {
                        return Err(ReadError::Malformed(400, "chunk size line too long"));
                    }
                }
                Err(_) => return Err(ReadError::Malformed(400, "bad chunk size")),
            }
            if fill(s, buf, waits.body_deadline()).await? == 0 {
                return Err(ReadError::Io);
            }
        };
        pos += line_len;
        if size == 0 {
            break;
        }
        // A size of 2^63 or more is no body anyone sends (and overflows the signed
        // 64-bit sizes of many parsers): malformed, not merely too large.
        if size >= 1 << 63 {
            return Err(ReadError::Malformed(400, "chunk size out of range"));
        }
        // Compared without adding: `body.len() + size` could overflow.
        if size > max_body.saturating_sub(body.len() as u64) {
            return Err(ReadError::Malformed(413, "request body too large"));
        }
        // Safe: size <= max_body, which the caller keeps within memory.
        let size = size as usize;
        while buf.len() < pos + size + 2 {
            if fill(s, buf, waits.body_deadline()).await? == 0 {
                return Err(ReadError::Io);
            }
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        pos += size;
        if &buf[pos..pos + 2] != b"\r\n" {
            return Err(ReadError::Malformed(400, "chunk not followed by CRLF"));
        }
        pos += 2;
    }
    // trailer section, ended by an empty line
    loop {
        let mut trailers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        match httparse::parse_headers(&buf[pos..], &mut trailers) {
            Ok(httparse::Status::Complete((n, _))) => {
                pos += n;
                break;
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() - pos > MAX_CHUNK_LINE {
                    return Err(ReadError::Malformed(400, "trailers too long"));
                }
            }
            Err(_) => return Err(ReadError::Malformed(400, "bad trailers")),
        }
        if fill(s, buf, waits.body_deadline()).await? == 0 {
            return Err(ReadError::Io);
        }
    }
    buf.drain(..pos);
    Ok((body, pos))
}

/// Splits a request-target into its percent-decoded path and query pairs.
///
/// Absolute-form targets (`http://host/path`) are reduced to their path.
pub fn split_target(target: &str) -> (String, Vec<(String, String)>) {
    let mut rest = target;
    for scheme in ["http://", "https://"] {
        // Compared as bytes: the target may hold UTF-8 whose character boundaries
        // do not fall at `scheme.len()` (slicing the `str` there would panic).
        let head = rest.as_bytes().get(..scheme.len());
        if head.is_some_and(|h| h.eq_ignore_ascii_case(scheme.as_bytes())) {
            // Safe: the first `scheme.len()` bytes are ASCII, so this is a boundary.
            let after = &rest[scheme.len()..];
            rest = match after.find(['/', '?']) {
                Some(i) => &after[i..],
                None => "/",
            };
            break;
        }
    }
    let rest = rest.split('#').next().unwrap_or("");
    let (raw_path, raw_query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let path = String::from_utf8_lossy(&percent_decode(raw_path.as_bytes(), false)).into_owned();
    let path = if path.is_empty() {
        "/".to_string()
    } else {
        path
    };
    let query = raw_query.map(parse_query).unwrap_or_default();
    (path, query)
}

/// Parses `a=1&b=%EA%B2%80+x` into decoded pairs (`+` is a space), as
/// `application/x-www-form-urlencoded` says ([`form_urlencoded`]).
pub fn parse_query(q: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(q.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Percent-decodes bytes; invalid escapes are kept as they are.
pub fn percent_decode(input: &[u8], plus_is_space: bool) -> Vec<u8> {
    if plus_is_space {
        let spaced: Vec<u8> = input
            .iter()
            .map(|&b| if b == b'+' { b' ' } else { b })
            .collect();
        percent_encoding::percent_decode(&spaced).collect()
    } else {
        percent_encoding::percent_decode(input).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_in_process_request_splits_its_target_like_a_read_one() {
        let r = Request::in_process("GET", "/%ED%8C%8C%EB%8F%84?q=a+b", &[("X-Name", "파도")]);
        assert_eq!(r.path, "/파도");
        assert_eq!(r.query, vec![("q".to_string(), "a b".to_string())]);
        assert_eq!(r.header("x-name"), Some("파도"));
        assert_eq!((r.version, r.keep_alive, r.wire_len), (1, true, 0));
    }

    #[test]
    fn decodes_hangul_and_plus() {
        let (path, q) = split_target("/api/search?q=%EA%B2%80%EC%83%89&x=a+b&flag");
        assert_eq!(path, "/api/search");
        assert_eq!(
            q,
            vec![
                ("q".to_string(), "검색".to_string()),
                ("x".to_string(), "a b".to_string()),
                ("flag".to_string(), String::new()),
            ]
        );
    }

    #[test]
    fn bad_escapes_are_kept() {
        assert_eq!(percent_decode(b"%zz%4", false), b"%zz%4".to_vec());
        assert_eq!(percent_decode(b"%41%", false), b"A%".to_vec());
        assert_eq!(percent_decode(b"a+b", false), b"a+b".to_vec());
        assert_eq!(percent_decode(b"%ff", false), vec![0xff]);
    }

    #[test]
    fn absolute_form_is_reduced_to_path() {
        assert_eq!(split_target("http://h:1/a%20b?x=1").0, "/a b");
        assert_eq!(split_target("HTTP://h").0, "/");
        assert_eq!(split_target("*").0, "*");
    }

    #[test]
    fn keep_alive_rules() {
        let h = |v: &str| vec![("Connection".to_string(), v.to_string())];
        assert!(keep_alive(1, &[]));
        assert!(!keep_alive(1, &h("close")));
        assert!(!keep_alive(0, &[]));
        assert!(keep_alive(0, &h("Keep-Alive")));
    }

    /// Reads one request from `raw` (the peer then closes its side).
    fn read_raw(raw: &[u8], max_body: u64) -> Result<Option<Request>, ReadError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let (mut client, mut server) = tokio::io::duplex(64 * 1024);
            client.write_all(raw).await.unwrap();
            drop(client);
            let mut buf = Vec::new();
            read_request(&mut server, &mut buf, max_body).await
        })
    }

    fn status_of(r: Result<Option<Request>, ReadError>) -> Option<u16> {
        match r {
            Err(ReadError::Malformed(code, _)) => Some(code),
            _ => None,
        }
    }

    #[test]
    fn huge_chunk_sizes_are_refused_not_panicking() {
        let head = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        for chunks in [
            "ffffffffffffffff\r\nabc\r\n0\r\n\r\n",
            "FFFFFFFFFFFFFFFF;ext=1\r\nabc\r\n0\r\n\r\n",
            // a small chunk first, then one that only overflows when added to it
            "3\r\nabc\r\nfffffffffffffffe\r\nabc\r\n0\r\n\r\n",
            "8000000000000000\r\n",
        ] {
            let r = read_raw(format!("{head}{chunks}").as_bytes(), MAX_BODY);
            assert_eq!(status_of(r), Some(400), "{chunks:?}");
        }
        // A size a client could mean, but more than the server takes: too large.
        for chunks in ["40000000\r\n", "3\r\nabc\r\n7fffffffffffffff\r\n"] {
            let r = read_raw(format!("{head}{chunks}").as_bytes(), MAX_BODY);
            assert_eq!(status_of(r), Some(413), "{chunks:?}");
        }
        // More hex digits than fit in 64 bits: not a size at all.
        let r = read_raw(
            format!("{head}10000000000000000\r\nabc\r\n0\r\n\r\n").as_bytes(),
            MAX_BODY,
        );
        assert_eq!(status_of(r), Some(400));
        // A chunk-size just at the limit is still read.
        let r = read_raw(
            format!("{head}3;name=value\r\nabc\r\n0\r\n\r\n").as_bytes(),
            3,
        );
        assert_eq!(r.unwrap().unwrap().body, b"abc");
    }

    #[test]
    fn huge_content_lengths_are_refused() {
        let r = read_raw(
            b"POST /x HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n",
            MAX_BODY,
        );
        assert_eq!(status_of(r), Some(413));
        let r = read_raw(
            b"POST /x HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n",
            MAX_BODY,
        );
        assert_eq!(status_of(r), Some(400));
    }

    #[test]
    fn non_ascii_targets_do_not_panic() {
        // "http:/" then a 3-byte character: byte 7 is inside it.
        let (path, _) = split_target("http:/\u{d55c}x");
        assert_eq!(path, "http:/\u{d55c}x");
        assert_eq!(
            split_target("\u{d55c}\u{d55c}\u{d55c}").0,
            "\u{d55c}\u{d55c}\u{d55c}"
        );
    }

    #[test]
    fn framing_rules() {
        let h = |n: &str, v: &str| vec![(n.to_string(), v.to_string())];
        assert!(matches!(
            body_framing(&h("Content-Length", "5")),
            Ok(Framing::Length(5))
        ));
        assert!(body_framing(&h("Content-Length", "-1")).is_err());
        assert!(body_framing(&h("Content-Length", "5, 6")).is_err());
        assert!(matches!(
            body_framing(&h("Transfer-Encoding", "chunked")),
            Ok(Framing::Chunked)
        ));
        assert!(body_framing(&h("Transfer-Encoding", "gzip")).is_err());
    }
}

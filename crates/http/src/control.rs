//! One small control-plane request: what pado itself asks of a server that is not the
//! load's target (a generator's `/live` and `/stop`, a live output's store, a
//! scraped `/metrics`, an event's `http:` call). A method, a URL's target and host,
//! headers, an optional body, a deadline and a bounded answer, over the same
//! connections and TLS as the load ([`exchange`]); one builder of the request's
//! bytes, so every such request is framed the same way (`Host` with its port as the
//! URL has it, a `User-Agent` naming the part of pado that asks, a `Content-Length`
//! whenever a body is sent).

use std::time::Duration;

use pado_metrics::ErrorKind;

use crate::conn::{Conn, Origin};
use crate::exchange::{exchange, RequestRef};

/// A control request, borrowed from its caller: nothing is copied until
/// [`ControlRequest::bytes`] writes it out.
#[derive(Clone, Copy, Debug)]
pub struct ControlRequest<'a> {
    /// `GET`, `POST`, …
    pub method: &'a str,
    /// The request target: path and query (see [`origin_form`]).
    pub target: &'a str,
    /// The `Host` header's value (see [`host_header`]).
    pub host: &'a str,
    /// The `User-Agent` header's value: which part of pado asks.
    pub user_agent: &'a str,
    /// More headers, in order, after `Host`, `User-Agent` and `Content-Length`.
    pub headers: &'a [(&'a str, &'a str)],
    /// The body; `None` sends no `Content-Length` (a bodiless `GET`), `Some(b"")`
    /// says `Content-Length: 0`.
    pub body: Option<&'a [u8]>,
    /// The whole exchange's deadline, connecting included.
    pub timeout: Duration,
    /// Most bytes of the answer's body kept; a longer answer is cut and says so
    /// ([`ControlAnswer::body_cut`]).
    pub max_answer: usize,
    /// Whether the answer's head is kept ([`ControlAnswer::header`] reads it).
    pub keep_head: bool,
    /// Whether a kept-alive connection the server had closed may be resent on a new
    /// one (only for requests that change nothing: `GET`).
    pub resend_safe: bool,
}

/// What a control request got back.
#[derive(Debug, Default)]
pub struct ControlAnswer {
    /// The answer's status (0 when none came).
    pub status: u16,
    /// Why no answer came (refused, timeout, TLS…).
    pub error: Option<ErrorKind>,
    /// The transport's own words for `error`, when it has them (a TLS alert).
    pub reason: Option<&'static str>,
    /// The answer's head as received, when asked for.
    pub head: Vec<u8>,
    /// The answer's body, at most `max_answer` bytes.
    pub body: Vec<u8>,
    /// Whether the body was longer than `max_answer`.
    pub body_cut: bool,
}

impl ControlAnswer {
    /// The value of header `name` (case-insensitive) in the kept head, if present.
    pub fn header(&self, name: &str) -> Option<String> {
        let text = String::from_utf8_lossy(&self.head);
        text.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

impl ControlRequest<'_> {
    /// The request as HTTP/1.1 bytes: the request line, `Host`, `User-Agent`,
    /// `Content-Length` when there is a body, the other headers, then the body.
    pub fn bytes(&self) -> Vec<u8> {
        let body = self.body.unwrap_or_default();
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {}\r\n",
            self.method, self.target, self.host, self.user_agent
        );
        if self.body.is_some() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        for (k, v) in self.headers {
            head.push_str(k);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        bytes
    }

    /// Send it on `conn` (opened to `origin` when empty, kept open when the server
    /// allows) and wait at most its `timeout` for the whole answer.
    pub async fn send(&self, conn: &mut Option<Conn>, origin: &Origin) -> ControlAnswer {
        let bytes = self.bytes();
        let mut out = ControlAnswer::default();
        let ex = exchange(
            conn,
            origin,
            RequestRef {
                bytes: &bytes,
                is_head: self.method == "HEAD",
                resend_safe: self.resend_safe,
                timeout: self.timeout,
                keep_body: Some((&mut out.body, self.max_answer)),
                keep_head: self.keep_head.then_some((&mut out.head, true)),
                failed_prefix: None,
                decoder: None,
                sse: None,
            },
        )
        .await;
        out.status = ex.status;
        out.error = ex.error;
        out.reason = ex.reason;
        out.body_cut = ex.body_cut;
        out
    }
}

/// The `Host` header for `url`: its host, with the port when the URL gives one.
pub fn host_header(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

/// The request target for `url` (origin form): its path and, when it has one, `?`
/// and its query.
pub fn origin_form(url: &url::Url) -> String {
    let mut target = url.path().to_string();
    if let Some(q) = url.query() {
        target.push('?');
        target.push_str(q);
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req<'a>(body: Option<&'a [u8]>, headers: &'a [(&'a str, &'a str)]) -> ControlRequest<'a> {
        ControlRequest {
            method: "POST",
            target: "/api/v1/write?db=파도",
            host: "127.0.0.1:9090",
            user_agent: "pado-test",
            headers,
            body,
            timeout: Duration::from_secs(1),
            max_answer: 16,
            keep_head: false,
            resend_safe: false,
        }
    }

    #[test]
    fn a_request_is_framed_once_the_same_way() {
        let with = req(Some(b"{\"a\":1}"), &[("Authorization", "Bearer t")]).bytes();
        assert_eq!(
            String::from_utf8(with).unwrap(),
            "POST /api/v1/write?db=파도 HTTP/1.1\r\nHost: 127.0.0.1:9090\r\nUser-Agent: pado-test\r\nContent-Length: 7\r\nAuthorization: Bearer t\r\n\r\n{\"a\":1}"
        );
        let empty = String::from_utf8(req(Some(b""), &[]).bytes()).unwrap();
        assert!(empty.contains("Content-Length: 0\r\n\r\n"), "{empty}");
        let bodiless = String::from_utf8(req(None, &[]).bytes()).unwrap();
        assert!(!bodiless.contains("Content-Length"), "{bodiless}");
        assert!(
            bodiless.ends_with("User-Agent: pado-test\r\n\r\n"),
            "{bodiless}"
        );
    }

    #[test]
    fn host_and_target_come_from_the_url() {
        let u = url::Url::parse("http://10.0.0.5:7070/base/live?from=3").unwrap();
        assert_eq!(host_header(&u), "10.0.0.5:7070");
        assert_eq!(origin_form(&u), "/base/live?from=3");
        let u = url::Url::parse("https://example.test/").unwrap();
        assert_eq!(host_header(&u), "example.test");
        assert_eq!(origin_form(&u), "/");
    }

    #[test]
    fn headers_are_read_from_the_kept_head() {
        let a = ControlAnswer {
            head: b"HTTP/1.1 200 OK\r\nPado-State: done\r\n\r\n".to_vec(),
            ..Default::default()
        };
        assert_eq!(a.header("pado-state").as_deref(), Some("done"));
        assert_eq!(a.header("x-missing"), None);
    }

    /// A loopback server that answers one request with `answer` and hands back
    /// the request's bytes.
    fn one_answer(answer: &'static [u8]) -> (url::Url, std::thread::JoinHandle<Vec<u8>>) {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = url::Url::parse(&format!("http://{}/x", l.local_addr().unwrap())).unwrap();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            s.write_all(answer).unwrap();
            got
        });
        (url, h)
    }

    fn run(url: &url::Url, r: ControlRequest<'_>) -> ControlAnswer {
        let origin = Origin::for_url(url, || crate::tls_client_config(false)).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut conn = None;
            r.send(&mut conn, &origin).await
        })
    }

    #[test]
    fn the_answer_is_bounded_and_its_head_kept() {
        let (url, server) = one_answer(
            b"HTTP/1.1 200 OK\r\nPado-State: done\r\nContent-Length: 20\r\n\r\n01234567890123456789",
        );
        let host = host_header(&url);
        let r = ControlRequest {
            method: "GET",
            target: "/x",
            host: &host,
            keep_head: true,
            body: None,
            ..req(None, &[])
        };
        let a = run(&url, r);
        let sent = String::from_utf8(server.join().unwrap()).unwrap();
        assert!(
            sent.starts_with(&format!("GET /x HTTP/1.1\r\nHost: {host}\r\n")),
            "{sent}"
        );
        assert_eq!(a.status, 200);
        assert_eq!(a.error, None);
        assert_eq!(a.header("Pado-State").as_deref(), Some("done"));
        assert_eq!(a.body, b"0123456789012345", "cut at max_answer (16)");
        assert!(a.body_cut);
    }

    #[test]
    fn no_answer_within_the_deadline_is_a_timeout() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = url::Url::parse(&format!("http://{}/x", l.local_addr().unwrap())).unwrap();
        let r = ControlRequest {
            timeout: Duration::from_millis(200),
            ..req(Some(b"x"), &[])
        };
        let started = std::time::Instant::now();
        let a = run(&url, r);
        assert_eq!(a.error, Some(ErrorKind::Timeout));
        assert_eq!(a.status, 0);
        assert!(started.elapsed() < Duration::from_secs(3));
        drop(l);
    }
}

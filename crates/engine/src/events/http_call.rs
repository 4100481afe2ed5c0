//! One event HTTP call through pado's own client: a fresh connection, the request
//! built from the event's method, URL, headers and body, bounded by the event's
//! timeout.

use std::time::Duration;

use pado_http::{exchange, tls_client_config, Origin, RequestRef};

/// Most bytes of an answer kept (the recorded tail is cut further).
pub(crate) const MAX_ANSWER: usize = 64 * 1024;

/// A resolved HTTP call.
#[derive(Clone, Debug)]
pub struct HttpCall {
    /// Method.
    pub method: String,
    /// Absolute URL.
    pub url: url::Url,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

/// How a call ended.
#[derive(Debug, Default)]
pub struct HttpResult {
    /// Status (0 when no answer came).
    pub status: u16,
    /// Why there was no answer (a transport category), or `timeout`.
    pub error: Option<String>,
    /// The answer's body (its first bytes).
    pub body: Vec<u8>,
}

impl HttpCall {
    /// The credentials this call sends: the value of each of its credential headers
    /// (`Authorization`, `Cookie`, `Proxy-Authorization`...), whole and without its
    /// scheme (`Bearer`, `Basic`), and each cookie's value: what an answer that
    /// echoes the request must not record.
    pub fn credentials(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (k, v) in &self.headers {
            if !crate::redact::is_sensitive(k) {
                continue;
            }
            let v = v.trim();
            out.push(v.as_bytes().to_vec());
            if let Some((_, token)) = v.split_once(' ') {
                out.push(token.trim().as_bytes().to_vec());
            }
            if k.eq_ignore_ascii_case("cookie") {
                for c in v.split(';') {
                    if let Some((_, val)) = c.split_once('=') {
                        out.push(val.trim().as_bytes().to_vec());
                    }
                }
            }
        }
        // Very short values would mask ordinary text everywhere; whole values stay.
        out.retain(|c| c.len() >= 4);
        out
    }

    /// The request's bytes.
    fn bytes(&self) -> Vec<u8> {
        let host = match self.url.port() {
            Some(p) => format!("{}:{p}", self.url.host_str().unwrap_or_default()),
            None => self.url.host_str().unwrap_or_default().to_string(),
        };
        let mut path = self.url.path().to_string();
        if let Some(q) = self.url.query() {
            path.push('?');
            path.push_str(q);
        }
        let mut head = format!(
            "{} {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: pado-event\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.method,
            self.body.len()
        );
        for (k, v) in &self.headers {
            head.push_str(k);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        let mut b = head.into_bytes();
        b.extend_from_slice(&self.body);
        b
    }

    /// Sends the call and waits at most `timeout` for the whole answer.
    pub fn send(&self, timeout: Duration) -> HttpResult {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                return HttpResult {
                    error: Some(format!("could not start a runtime: {e}")),
                    ..Default::default()
                }
            }
        };
        let origin = match Origin::for_url(&self.url, || tls_client_config(false)) {
            Ok(o) => o,
            Err(e) => {
                return HttpResult {
                    error: Some(e),
                    ..Default::default()
                }
            }
        };
        if origin.addrs.is_empty() {
            return HttpResult {
                error: Some(format!("host `{}` did not resolve", origin.host)),
                ..Default::default()
            };
        }
        let bytes = self.bytes();
        let mut body = Vec::new();
        let ex = rt.block_on(async {
            let mut conn = None;
            exchange(
                &mut conn,
                &origin,
                RequestRef {
                    bytes: &bytes,
                    is_head: self.method == "HEAD",
                    resend_safe: false,
                    timeout,
                    keep_body: Some((&mut body, MAX_ANSWER)),
                    keep_head: None,
                    failed_prefix: None,
                    decoder: None,
                },
            )
            .await
        });
        HttpResult {
            status: ex.status,
            error: ex.error.map(|k| k.as_str().to_string()),
            body,
        }
    }
}

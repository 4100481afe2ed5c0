//! One event HTTP call through pado's own client: a fresh connection, the request
//! built from the event's method, URL, headers and body, bounded by the event's
//! timeout.

use std::time::Duration;

use pado_http::{host_header, origin_form, tls_client_config, ControlRequest, Origin};

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
        let (host, target) = (host_header(&self.url), origin_form(&self.url));
        let mut headers: Vec<(&str, &str)> = vec![("Connection", "close")];
        headers.extend(self.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let ex = rt.block_on(
            ControlRequest {
                method: &self.method,
                target: &target,
                host: &host,
                user_agent: "pado-event",
                headers: &headers,
                body: Some(&self.body),
                timeout,
                max_answer: MAX_ANSWER,
                keep_head: false,
                resend_safe: false,
            }
            .send(&mut None, &origin),
        );
        HttpResult {
            status: ex.status,
            error: ex.error.map(|k| k.as_str().to_string()),
            body: ex.body,
        }
    }
}

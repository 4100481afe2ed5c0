//! The coordinator's requests to one generator (an agent, or any server of the
//! [`crate::job`] endpoints), over pado's own HTTP/1.1 client: one kept-alive
//! connection per generator, every request bounded in time; over TLS, the agent's
//! certificate verified as [`AgentTrust`] says before a byte (the token included)
//! is sent.

use std::sync::Arc;
use std::time::Duration;

use pado_http::{host_header, Conn, ControlAnswer, ControlRequest, Origin};

use crate::coordinate::{GeneratorLink, LivePoll};
use crate::status::Status;
use crate::tls::pinned::PinnedVerifier;
use crate::tls::AgentTrust;

/// How long one control request may take (a live poll, a stop, a status).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long fetching a result may take (tens of MB for an hour's run).
pub const RESULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Most bytes a control answer may have (a live poll of 120 busy seconds).
const MAX_ANSWER: usize = 256 * 1024 * 1024;
/// Most bytes an answer of `GET /observed` may have: twice what a generator sends
/// ([`crate::feed::MAX_OBSERVED_BYTES_PER_POLL`]), so one long line still comes
/// whole; a larger one is cut and refused.
const MAX_OBSERVED_ANSWER: usize = 2 * crate::feed::MAX_OBSERVED_BYTES_PER_POLL;

/// Why a request to a generator failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL given for the generator.
    #[error("generator `{0}`: {1}")]
    Url(String, String),
    /// No answer (refused, timeout, reset...).
    #[error("{0}: {1}")]
    Transport(String, String),
    /// An answer that was not the one expected.
    #[error("{0} answered {1}: {2}")]
    Status(String, u16, String),
}

/// One generator as the coordinator reaches it.
pub struct GeneratorClient {
    label: String,
    origin: Origin,
    /// The URL's path without its trailing `/` (`/` → empty).
    base: String,
    host_header: String,
    token: Option<String>,
    conn: Option<Conn>,
    /// For a pinned agent: the verifier, which names a certificate it refused.
    pin: Option<Arc<PinnedVerifier>>,
}

impl GeneratorClient {
    /// A client for the generator at `url` (`http://host:port`, `https://...` or
    /// `host:port`); `token` is sent as `Authorization: Bearer` (agents started
    /// with a token refuse requests without it), only once the connection is
    /// established (over TLS: once the agent's certificate passed `trust`).
    ///
    /// With an explicit `trust` (a pin or a CA file), `host:port` means `https://`
    /// and an `http://` URL is refused: a coordinator told to verify agents never
    /// talks to one in clear text.
    pub fn new(
        url: &str,
        token: Option<String>,
        trust: &AgentTrust,
    ) -> Result<GeneratorClient, ClientError> {
        let full = if url.contains("://") {
            url.to_string()
        } else if trust.is_explicit() {
            format!("https://{url}")
        } else {
            format!("http://{url}")
        };
        let parsed =
            url::Url::parse(&full).map_err(|e| ClientError::Url(url.into(), e.to_string()))?;
        if trust.is_explicit() && parsed.scheme() != "https" {
            return Err(ClientError::Url(
                url.into(),
                "a certificate fingerprint or a CA file was given to verify agents over TLS, and this URL is not https:// (pado never falls back to clear text): start the agent with --tls and give https://HOST:PORT".into(),
            ));
        }
        let mut pin = None;
        let origin = Origin::for_url(&parsed, || {
            let (cfg, verifier) = trust.client_config();
            pin = verifier;
            cfg
        })
        .map_err(|e| ClientError::Url(url.into(), e))?;
        if origin.addrs.is_empty() {
            return Err(ClientError::Url(url.into(), "host did not resolve".into()));
        }
        let host_header = host_header(&parsed);
        Ok(GeneratorClient {
            label: origin.label.clone(),
            base: parsed.path().trim_end_matches('/').to_string(),
            origin,
            host_header,
            token,
            conn: None,
            pin,
        })
    }

    /// The generator as people read it (`http://10.0.0.5:7070`).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// One request; any status is an answer.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        timeout: Duration,
    ) -> Result<ControlAnswer, ClientError> {
        self.send(method, path, body, None, timeout, MAX_ANSWER)
            .await
    }

    /// One request with a body of `content_type`, if given; an answer of more
    /// than `max_answer` bytes is an error.
    async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        content_type: Option<&str>,
        timeout: Duration,
        max_answer: usize,
    ) -> Result<ControlAnswer, ClientError> {
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| ("Authorization", a))
            .into_iter()
            .chain(content_type.map(|c| ("Content-Type", c)))
            .collect();
        let target = format!("{}{path}", self.base);
        let ex = ControlRequest {
            method,
            target: &target,
            host: &self.host_header,
            user_agent: "pado-coordinator",
            headers: &headers,
            body: Some(body),
            timeout,
            max_answer,
            keep_head: true,
            resend_safe: method == "GET",
        }
        .send(&mut self.conn, &self.origin)
        .await;
        if let Some(kind) = ex.error {
            return Err(ClientError::Transport(
                self.label.clone(),
                match kind.as_str() {
                    "connect_refused" => "refused the connection (is the agent running?)".into(),
                    "timeout" => format!("no answer within {} s", timeout.as_secs()),
                    "tls" => self.tls_failure(ex.reason),
                    other => other.to_string(),
                },
            ));
        }
        if ex.body_cut {
            return Err(ClientError::Transport(
                self.label.clone(),
                format!("answer larger than {} MiB", max_answer >> 20),
            ));
        }
        Ok(ex)
    }

    /// Why the TLS handshake failed, in words that say what to do: for a pinned
    /// agent whose certificate is another, both fingerprints.
    fn tls_failure(&self, reason: Option<&'static str>) -> String {
        if let Some((pinned, presented)) = self
            .pin
            .as_ref()
            .and_then(|p| Some((p.pinned(), p.refused()?)))
        {
            return format!(
                "its TLS certificate's fingerprint is {presented}, not the pinned {pinned}: this is not the agent that was pinned (or it was restarted: a generated certificate is new at every start, and the agent prints its fingerprint); nothing was sent to it"
            );
        }
        let reason = reason.unwrap_or("handshake failed");
        if self.pin.is_none() && reason.contains("unknown issuer") {
            format!("TLS: {reason}: pin the agent's certificate with --agent-fingerprint (`pado agent --tls` prints it) or give its CA with --agent-ca FILE")
        } else {
            format!("TLS: {reason}")
        }
    }

    /// A request whose answer must be `want`.
    pub async fn expect(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        timeout: Duration,
        want: u16,
    ) -> Result<ControlAnswer, ClientError> {
        let a = self.request(method, path, body, timeout).await?;
        if a.status != want {
            let text: String = String::from_utf8_lossy(&a.body).chars().take(300).collect();
            return Err(ClientError::Status(self.label.clone(), a.status, text));
        }
        Ok(a)
    }

    /// Its `/status`: idle, running or done with its exit code.
    pub async fn status(&mut self) -> Result<Status, ClientError> {
        let a = self
            .expect("GET", "/status", b"", REQUEST_TIMEOUT, 200)
            .await?;
        Status::parse(&a.body).map_err(|e| {
            ClientError::Status(self.label.clone(), 200, format!("status is not JSON: {e}"))
        })
    }

    /// Hands a change of the load to the generator's run (`POST /control`, `body`
    /// a `ControlCommand`'s JSON): `Ok` once it took it, else why not in its words
    /// (its `error`, or the transport's).
    pub async fn control(&mut self, body: &[u8]) -> Result<(), String> {
        let a = self
            .send(
                "POST",
                "/control",
                body,
                Some("application/json"),
                REQUEST_TIMEOUT,
                MAX_ANSWER,
            )
            .await
            .map_err(|e| e.to_string())?;
        if a.status == 200 {
            return Ok(());
        }
        let words = serde_json::from_slice::<serde_json::Value>(&a.body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&a.body).chars().take(300).collect());
        Err(format!("answered {}: {words}", a.status))
    }

    /// The result directory as a tar (only once the run ended).
    pub async fn result_tar(&mut self) -> Result<Vec<u8>, ClientError> {
        let a = self
            .expect("GET", "/result.tar", b"", RESULT_TIMEOUT, 200)
            .await?;
        Ok(a.body)
    }
}

impl GeneratorLink for GeneratorClient {
    async fn live(&mut self, from: u32) -> Result<LivePoll, String> {
        let a = self
            .expect(
                "GET",
                &format!("/live?from={from}"),
                b"",
                REQUEST_TIMEOUT,
                200,
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(LivePoll {
            ended: a.header("Pado-State").as_deref() == Some("done"),
            lines: a.body,
        })
    }

    async fn stop(&mut self) -> Result<(), String> {
        self.expect("POST", "/stop", b"", REQUEST_TIMEOUT, 202)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// `GET /observed?from=N`, its answer bounded by [`MAX_OBSERVED_ANSWER`];
    /// `Ok(None)` from a generator that does not serve it (`404`).
    async fn observed(&mut self, from: usize) -> Result<Option<Vec<u8>>, String> {
        let a = self
            .send(
                "GET",
                &format!("/observed?from={from}"),
                b"",
                None,
                REQUEST_TIMEOUT,
                MAX_OBSERVED_ANSWER,
            )
            .await
            .map_err(|e| e.to_string())?;
        match a.status {
            200 => Ok(Some(a.body)),
            404 => Ok(None),
            other => Err(format!("answered {other}")),
        }
    }
}

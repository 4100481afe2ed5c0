//! Delivery: one thread per output, fed by a bounded channel the sink only ever
//! tries (a full channel drops the second and counts it, the aggregator never
//! waits); each thread keeps a bounded buffer of encoded-ready seconds, sends them
//! in batches over pado's own HTTP client, retries transient failures with
//! exponential backoff, and at the end flushes for a bounded time.
//!
//! HTTP: pado's own client (`pado_http`), as the fleet's coordinator uses it: it is
//! already built, resolves and connects the way every other pado request does,
//! speaks TLS with the same trust store, bounds every exchange by a deadline, and
//! keeps one connection alive per store; a second HTTP stack (ureq) would add
//! dependencies for the same POST.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use pado_http::{host_header, origin_form, tls_client_config, Conn, ControlRequest, Origin};
use pado_metrics::SecondRecord;

use crate::spec::{InfluxApi, Kind, OutputSpec};
use crate::state::{RunLabels, Snapshot, State};
use crate::{influx, otlp, prometheus};

/// Seconds an output keeps while its store does not take them; older ones are
/// dropped (and counted) first. Counters are cumulative, so a dropped second loses
/// resolution, not counts, once a later second gets through.
pub const BUFFER_SECONDS: usize = 120;
/// Most seconds one write carries.
pub const MAX_BATCH: usize = 10;
/// How long one write may take.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the end of the run waits for what is still buffered.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(3);
const BACKOFF_START: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(4);
/// Most bytes of a store's answer kept (its error message).
const MAX_ANSWER: usize = 64 * 1024;

/// Why outputs could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// InfluxDB v2 without its token.
    #[error("{0}: the v2 API needs a token: set environment variable {1}")]
    NoToken(String, String),
    /// The URL's host did not resolve, or TLS could not be set up.
    #[error("{0}: {1}")]
    Url(String, String),
    /// The thread could not start.
    #[error("{0}: could not start its thread: {1}")]
    Thread(String, String),
}

/// What one output delivered: `summary.json`'s and `run.json`'s `outputs[]`.
pub use pado_metrics::OutputMeta as OutputReport;

enum Msg {
    Second(Arc<SecondRecord>, i64),
    End(Instant),
}

struct One {
    tx: SyncSender<Msg>,
    /// Seconds the sink could not hand over (channel full).
    refused: Arc<AtomicU64>,
    thread: std::sync::Mutex<Option<JoinHandle<OutputReport>>>,
    kind: Kind,
    url: String,
}

/// The run's outputs, fed by its sink.
pub struct Outputs {
    outs: Vec<One>,
}

impl Outputs {
    /// Start one thread per output. InfluxDB v2's token is read from its
    /// environment variable here.
    pub fn start(specs: &[OutputSpec], labels: &RunLabels) -> Result<Outputs, StartError> {
        let mut outs = Vec::new();
        for spec in specs {
            let token = match spec.influx_api() {
                Some(InfluxApi::V2) => Some(
                    std::env::var(spec.token_var())
                        .ok()
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| {
                            StartError::NoToken(spec.label(), spec.token_var().to_string())
                        })?,
                ),
                _ => None,
            };
            let client = Client::new(spec, token)?;
            let (tx, rx) = mpsc::sync_channel(BUFFER_SECONDS);
            let refused = Arc::new(AtomicU64::new(0));
            let state = State::new(labels.clone());
            let report = OutputReport {
                kind: spec.kind.as_str().into(),
                url: spec.shown_url(),
                ..Default::default()
            };
            let thread = std::thread::Builder::new()
                .name(format!("output-{}", spec.kind))
                .spawn(move || deliver(rx, client, state, report))
                .map_err(|e| StartError::Thread(spec.label(), e.to_string()))?;
            outs.push(One {
                tx,
                refused,
                thread: std::sync::Mutex::new(Some(thread)),
                kind: spec.kind,
                url: spec.shown_url(),
            });
        }
        Ok(Outputs { outs })
    }

    /// Whether there is no output.
    pub fn is_empty(&self) -> bool {
        self.outs.is_empty()
    }

    /// Hand a closed second to every output without ever waiting.
    pub fn send(&self, r: &SecondRecord) {
        if self.outs.is_empty() {
            return;
        }
        let at_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let r = Arc::new(r.clone());
        for o in &self.outs {
            if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
                o.tx.try_send(Msg::Second(r.clone(), at_ms))
            {
                o.refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// End: each output flushes what it holds for at most `flush`, then reports
    /// (once; a second call reports nothing).
    pub fn finish(&self, flush: Duration) -> Vec<OutputReport> {
        let deadline = Instant::now() + flush;
        for o in &self.outs {
            // Waits only while the channel is full, which the thread drains without
            // sending anything further once it reads `End`.
            let _ = o.tx.send(Msg::End(deadline));
        }
        self.outs
            .iter()
            .filter_map(|o| {
                let thread = pado_base::lock(&o.thread).take()?;
                let mut r = thread.join().unwrap_or_else(|_| OutputReport {
                    kind: o.kind.as_str().into(),
                    url: o.url.clone(),
                    last_error: Some("the output's thread panicked".into()),
                    ..Default::default()
                });
                r.seconds_dropped += o.refused.load(Ordering::Relaxed);
                Some(r)
            })
            .collect()
    }
}

/// The output's thread: fold, buffer, send, retry, flush.
fn deliver(
    rx: mpsc::Receiver<Msg>,
    mut client: Client,
    mut state: State,
    mut report: OutputReport,
) -> OutputReport {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            report.last_error = Some(format!("could not start: {e}"));
            // Count what arrives as dropped until the end.
            while let Ok(m) = rx.recv() {
                match m {
                    Msg::Second(..) => report.seconds_dropped += 1,
                    Msg::End(_) => break,
                }
            }
            return report;
        }
    };
    let mut buf: VecDeque<Snapshot> = VecDeque::new();
    let mut end: Option<Instant> = None;
    let mut next_try = Instant::now();
    let mut backoff = Duration::ZERO;
    loop {
        // Take everything waiting; wait only when there is nothing to send now.
        let now = Instant::now();
        let wake = if buf.is_empty() {
            end.unwrap_or(now + Duration::from_secs(3600))
        } else {
            next_try.min(end.unwrap_or(next_try))
        };
        let mut first = true;
        loop {
            let got = if first && wake > now {
                rx.recv_timeout(wake - now)
            } else {
                rx.try_recv().map_err(|e| match e {
                    mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                    mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                })
            };
            first = false;
            match got {
                Ok(Msg::Second(r, at_ms)) => {
                    buf.push_back(state.fold(&r, at_ms));
                    if buf.len() > BUFFER_SECONDS {
                        buf.pop_front();
                        report.seconds_dropped += 1;
                    }
                }
                Ok(Msg::End(d)) => end = Some(d),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    end.get_or_insert_with(|| Instant::now() + FLUSH_TIMEOUT);
                    break;
                }
            }
        }
        let now = Instant::now();
        if let Some(d) = end {
            if buf.is_empty() {
                break;
            }
            if now >= d {
                report.seconds_dropped += buf.len() as u64;
                if report.last_error.is_none() {
                    report.last_error = Some("the end-of-run flush ran out of time".into());
                }
                break;
            }
        }
        if buf.is_empty() || now < next_try {
            continue;
        }
        let n = buf.len().min(MAX_BATCH);
        let batch: Vec<&Snapshot> = buf.iter().take(n).collect();
        let timeout = match end {
            Some(d) => WRITE_TIMEOUT.min(d.saturating_duration_since(now)),
            None => WRITE_TIMEOUT,
        };
        let body = client.encode(&batch);
        match rt.block_on(client.post(&body, timeout)) {
            Ok(()) => {
                report.seconds_sent += n as u64;
                report.writes += 1;
                buf.drain(..n);
                backoff = Duration::ZERO;
            }
            Err(Failure::Retry(e)) => {
                report.retries += 1;
                report.last_error = Some(e);
                backoff = if backoff.is_zero() {
                    BACKOFF_START
                } else {
                    (backoff * 2).min(BACKOFF_MAX)
                };
                next_try = Instant::now() + backoff;
            }
            Err(Failure::Refused(e)) => {
                report.seconds_dropped += n as u64;
                report.last_error = Some(e);
                buf.drain(..n);
            }
        }
    }
    report
}

enum Failure {
    /// Worth trying again (no answer, 5xx, 429).
    Retry(String),
    /// The store refused these seconds (4xx): trying again would not help.
    Refused(String),
}

/// One store as an output reaches it. Holds InfluxDB v2's token: never printed.
struct Client {
    kind: Kind,
    origin: Origin,
    target: String,
    host_header: String,
    /// `Authorization` header value: InfluxDB v2's token, or the URL's user and
    /// password as Basic authentication.
    auth: Option<String>,
    /// Every credential this client sends (the token, the URL's password and
    /// credential query values), masked in any answer the store quotes back.
    secrets: Vec<String>,
    conn: Option<Conn>,
}

impl Client {
    fn new(spec: &OutputSpec, token: Option<String>) -> Result<Client, StartError> {
        let origin = Origin::for_url(&spec.url, || tls_client_config(false))
            .map_err(|e| StartError::Url(spec.label(), e))?;
        if origin.addrs.is_empty() {
            return Err(StartError::Url(spec.label(), "host did not resolve".into()));
        }
        let host_header = host_header(&spec.url);
        let mut target = origin_form(&spec.url);
        if spec.influx_api() == Some(InfluxApi::V1) && !target.contains("precision=") {
            // Timestamps are nanoseconds, the v1 default; say so anyway.
            target.push_str("&precision=ns");
        }
        let mut secrets = spec.url_secrets();
        secrets.extend(token.iter().cloned());
        let auth = match (&token, spec.basic_auth()) {
            (Some(t), _) => Some(format!("Token {t}")),
            (None, Some((user, pass))) => {
                use base64::Engine as _;
                let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                secrets.push(b.clone());
                Some(format!("Basic {b}"))
            }
            (None, None) => None,
        };
        secrets.retain(|s| !s.is_empty());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Ok(Client {
            kind: spec.kind,
            origin,
            target,
            host_header,
            auth,
            secrets,
            conn: None,
        })
    }

    fn encode(&self, batch: &[&Snapshot]) -> Vec<u8> {
        match self.kind {
            Kind::Prometheus => prometheus::body(batch),
            Kind::InfluxDb => influx::body(batch),
            Kind::Otlp => otlp::body(batch),
        }
    }

    /// Strip every credential this client sends from a text the store sent back,
    /// should it echo one.
    fn clean(&self, s: &str) -> String {
        self.secrets.iter().fold(s.to_string(), |acc, secret| {
            acc.replace(secret.as_str(), "***")
        })
    }

    async fn post(&mut self, body: &[u8], timeout: Duration) -> Result<(), Failure> {
        let mut headers: Vec<(&str, &str)> = match self.kind {
            Kind::Prometheus => prometheus::HEADERS.to_vec(),
            Kind::InfluxDb => vec![("Content-Type", influx::CONTENT_TYPE)],
            Kind::Otlp => vec![("Content-Type", otlp::CONTENT_TYPE)],
        };
        if let Some(a) = &self.auth {
            headers.push(("Authorization", a));
        }
        let ex = ControlRequest {
            method: "POST",
            target: &self.target,
            host: &self.host_header,
            user_agent: concat!("pado/", env!("CARGO_PKG_VERSION")),
            headers: &headers,
            body: Some(body),
            timeout,
            max_answer: MAX_ANSWER,
            keep_head: false,
            resend_safe: false,
        }
        .send(&mut self.conn, &self.origin)
        .await;
        if let Some(kind) = ex.error {
            return Err(Failure::Retry(match kind.as_str() {
                "connect_refused" => "connection refused".into(),
                "timeout" | "connect_timeout" => {
                    format!("no answer within {:.1} s", timeout.as_secs_f64())
                }
                other => other.replace('_', " "),
            }));
        }
        if (200..300).contains(&ex.status) {
            return Ok(());
        }
        let text: String = String::from_utf8_lossy(&ex.body)
            .chars()
            .take(200)
            .collect();
        let msg = self.clean(&format!("answered {}: {}", ex.status, text.trim()));
        if ex.status >= 500 || ex.status == 429 || ex.status == 408 {
            Err(Failure::Retry(msg))
        } else {
            Err(Failure::Refused(msg))
        }
    }
}

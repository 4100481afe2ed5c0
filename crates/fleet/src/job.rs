//! One segment's run as its generator serves it to the coordinator, during the run
//! and after it. The same endpoints on a Kubernetes generator pod and on an agent:
//!
//! - `GET /status`: `{"state":"running","seconds":N}`, then
//!   `{"state":"done","exit_code":N,"error":null}`;
//! - `GET /live?from=T`: the complete lines of the run's `timeline.jsonl` for
//!   seconds `T..` (at most [`crate::feed::MAX_SECONDS_PER_POLL`]), with header
//!   `Pado-State: running|done`; a `done` answer with no lines means the feed has
//!   ended;
//! - `GET /observed?from=N`: the complete lines of the run's `observe.jsonl` (the
//!   target's metrics as its scraper read them, `observe:`) from line `N` on, at
//!   most [`crate::feed::MAX_OBSERVED_LINES_PER_POLL`] lines and
//!   [`crate::feed::MAX_OBSERVED_BYTES_PER_POLL`] bytes, with `Pado-State` as
//!   `/live` has it; empty while the run scrapes nothing (only the segment told
//!   to scrape has the file);
//! - `POST /stop`: stop the run gracefully (as Ctrl-C would): the coordinator's
//!   `abort_on_fail`, or its own Ctrl-C;
//! - `POST /control`: change the load of the running segment (a `ControlCommand`
//!   as JSON, e.g. `{"action":"set_rate_factor","factor":2}`), handed to the run's
//!   [`ControlFn`]: `200 {"ok":true}`, or the run's refusal with its words
//!   (`400` a bad command, `409` one the run cannot take, or the run has ended);
//! - `GET /result.tar`: the result directory as one tar (409 while running);
//! - `POST /done`: the coordinator has the result.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pado_h1server::{
    lingering_close, read_request_gated, Gate, Gated, Patience, ReadError, Request, Unread, LINGER,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;

use crate::access::Access;
use crate::archive;
use crate::feed::{
    LineFeed, MAX_OBSERVED_BYTES_PER_POLL, MAX_OBSERVED_LINES_PER_POLL, MAX_SECONDS_PER_POLL,
    MAX_TIMELINE_BYTES_PER_POLL,
};
use crate::status::Status;

/// How a run is stopped when the coordinator asks (`POST /stop`).
pub type StopFn = Arc<dyn Fn() + Send + Sync>;

/// How a change of the load reaches the run (`POST /control`): the request's body
/// (a `ControlCommand`'s JSON, read by the caller, which knows the type) in, and
/// `Ok` once the run took it, or the status and words of its refusal.
pub type ControlFn = Arc<dyn Fn(&[u8]) -> Result<(), ControlRefusal> + Send + Sync>;

/// Why a run did not take a change of its load, as `POST /control` answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlRefusal {
    /// `400` for a command that is not one, `409` for one the run cannot take now,
    /// `503` when the run could not be reached.
    pub status: u16,
    /// The run's own words.
    pub error: String,
}

/// An answer to one request.
#[derive(Debug)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// Body.
    pub body: Arc<Vec<u8>>,
}

impl Answer {
    /// A plain-text answer.
    pub fn text(status: u16, body: impl Into<String>) -> Answer {
        Answer {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: Arc::new(body.into().into_bytes()),
        }
    }

    /// A JSON answer.
    pub fn json(status: u16, v: &serde_json::Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: Arc::new(v.to_string().into_bytes()),
        }
    }

    /// Lines of a growing JSON-lines file read from `from` on (the live feeds):
    /// `Pado-State` says whether the run still goes; a read error names `what`.
    fn lines(read: std::io::Result<Vec<u8>>, running: bool, what: &str) -> Answer {
        match read {
            Ok(lines) => Answer {
                status: 200,
                content_type: "application/x-ndjson",
                headers: vec![(
                    "Pado-State",
                    if running { "running" } else { "done" }.into(),
                )],
                body: Arc::new(lines),
            },
            Err(e) => Answer::text(500, format!("{what}: {e}")),
        }
    }
}

/// What the server knows of the run.
struct State {
    feed: LineFeed,
    exit_code: Option<i32>,
    tar: Option<Arc<Vec<u8>>>,
    pack_error: Option<String>,
    stop_asked: bool,
}

/// One run served to the coordinator.
pub struct Job {
    results: PathBuf,
    log: Option<PathBuf>,
    state: Mutex<State>,
    /// The feed of `observe.jsonl`, under a lock of its own: reading it never
    /// holds up `/live` or `/status`.
    observed: Mutex<LineFeed>,
    stop: StopFn,
    control: Option<ControlFn>,
    done: Notify,
}

impl Job {
    /// The run writing its result directory at `results`; `stop` stops it.
    pub fn new(results: PathBuf, stop: StopFn) -> Job {
        Job {
            state: Mutex::new(State {
                feed: LineFeed::new(results.join("timeline.jsonl")),
                exit_code: None,
                tar: None,
                pack_error: None,
                stop_asked: false,
            }),
            observed: Mutex::new(LineFeed::new(
                results.join(pado_results::observed::OBSERVE_FILE),
            )),
            results,
            log: None,
            stop,
            control: None,
            done: Notify::new(),
        }
    }

    /// The run's output is in `log`: a run that failed (an exit code other than 0,
    /// or 99 for failed thresholds) shows its last lines in `/status`.
    pub fn with_log(mut self, log: PathBuf) -> Job {
        self.log = Some(log);
        self
    }

    /// The run's load can be changed through `control` (`POST /control`); without
    /// it the endpoint answers `409`.
    pub fn with_control(mut self, control: ControlFn) -> Job {
        self.control = Some(control);
        self
    }

    /// `POST /control`: the body handed to the run's control while it runs. Not
    /// under the state's lock: the run's answer may take a moment, and the live
    /// feed must not wait for it.
    fn control(&self, body: &[u8]) -> Answer {
        if self.lock().exit_code.is_some() {
            return Answer::json(409, &serde_json::json!({ "error": "the run has ended" }));
        }
        let Some(control) = &self.control else {
            return Answer::json(
                409,
                &serde_json::json!({ "error": "this generator's run cannot be steered" }),
            );
        };
        match control(body) {
            Ok(()) => Answer::json(200, &serde_json::json!({ "ok": true })),
            Err(r) => Answer::json(r.status, &serde_json::json!({ "error": r.error })),
        }
    }

    /// `GET /observed?from=N`: the lines of `observe.jsonl` from line `N` on,
    /// bounded per answer; `Pado-State` says whether the run still goes.
    fn observed(&self, req: &Request) -> Answer {
        let from = match req.query_param("from").map(str::parse::<usize>) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return Answer::text(400, "from: not a line number"),
        };
        // The run's state first: a `done` answer then holds every line written.
        let running = self.lock().exit_code.is_none();
        let read = pado_base::lock(&self.observed).lines_from(
            from,
            MAX_OBSERVED_LINES_PER_POLL,
            MAX_OBSERVED_BYTES_PER_POLL,
        );
        Answer::lines(read, running, "observe.jsonl")
    }

    /// The last lines of the run's output when it failed.
    fn log_tail(&self, code: i32) -> Option<String> {
        if code == 0 || code == 99 {
            return None;
        }
        let bytes = std::fs::read(self.log.as_ref()?).ok()?;
        let tail = &bytes[bytes.len().saturating_sub(2000)..];
        Some(String::from_utf8_lossy(tail).trim().to_string())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        pado_base::lock(&self.state)
    }

    /// The run ended with `code`: pack its directory for `/result.tar`.
    pub fn finished(&self, code: i32) {
        let packed = archive::pack_dir(&self.results);
        let mut s = self.lock();
        match packed {
            Ok(t) => s.tar = Some(Arc::new(t)),
            Err(e) => s.pack_error = Some(format!("{}: {e}", self.results.display())),
        }
        s.exit_code = Some(code);
    }

    /// The run's exit code, once it ended.
    pub fn exit_code(&self) -> Option<i32> {
        self.lock().exit_code
    }

    /// Whether the coordinator asked the run to stop.
    pub fn stop_asked(&self) -> bool {
        self.lock().stop_asked
    }

    /// Waits for the coordinator's `POST /done`.
    pub async fn collected(&self) {
        self.done.notified().await
    }

    /// The answer to `req`, when it is one of the job's endpoints.
    pub fn answer(&self, req: &Request) -> Option<Answer> {
        if req.method == "POST" && req.path == "/control" {
            return Some(self.control(&req.body));
        }
        if req.method == "GET" && req.path == "/observed" {
            return Some(self.observed(req));
        }
        let mut s = self.lock();
        let running = s.exit_code.is_none();
        Some(match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/status") => {
                let status = match s.exit_code {
                    None => Status::Running {
                        seconds: s.feed.lines() as u64,
                    },
                    Some(c) => Status::Done {
                        exit_code: c,
                        error: s.pack_error.clone(),
                        log_tail: self.log_tail(c),
                    },
                };
                Answer::json(200, &status.to_json())
            }
            ("GET", "/live") => {
                let from = match req.query_param("from").map(str::parse::<usize>) {
                    None => 0,
                    Some(Ok(n)) => n,
                    Some(Err(_)) => return Some(Answer::text(400, "from: not a second")),
                };
                let read =
                    s.feed
                        .lines_from(from, MAX_SECONDS_PER_POLL, MAX_TIMELINE_BYTES_PER_POLL);
                Answer::lines(read, running, "timeline")
            }
            ("POST", "/stop") => {
                if running && !s.stop_asked {
                    s.stop_asked = true;
                    (self.stop)();
                }
                Answer::text(202, if running { "stopping" } else { "already ended" })
            }
            ("GET", "/result.tar") => match (&s.tar, &s.pack_error) {
                (Some(t), _) => Answer {
                    status: 200,
                    content_type: "application/x-tar",
                    headers: Vec::new(),
                    body: t.clone(),
                },
                (None, Some(e)) => Answer::text(500, e.clone()),
                (None, None) => Answer::text(409, "the run is still going"),
            },
            ("POST", "/done") => {
                if running {
                    Answer::text(409, "the run is still going")
                } else {
                    self.done.notify_one();
                    Answer::text(200, "bye")
                }
            }
            _ => return None,
        })
    }
}

/// How a fleet server reads requests: who may send them, how large a body each
/// may have, how long a connection may keep it waiting.
#[derive(Clone, Debug)]
pub struct ServeRules {
    /// Who is let in, judged on the head before the body is read.
    pub access: Access,
    /// The largest body of `POST /job` (a job's bundle); every other request
    /// carries at most [`SMALL_BODY`].
    pub max_job_body: u64,
    /// How long a head may take and a body may stall; a TLS handshake gets the
    /// head's patience too.
    pub patience: Patience,
    /// Serve HTTPS with this configuration (`pado agent --tls`); `None` for plain
    /// HTTP (loopback, a trusted network, a pod reached through the API server).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// The largest body of a request other than `POST /job` (theirs are empty).
pub const SMALL_BODY: u64 = 1024;

/// How long a connection may keep a fleet server waiting: a coordinator polls once
/// a second, so a head that takes half a minute is not one of its requests.
pub const PATIENCE: Patience = Patience {
    head: std::time::Duration::from_secs(30),
    body_stall: std::time::Duration::from_secs(30),
};

impl ServeRules {
    /// The gate a request's head goes through: refused (`403`/`401`, its body left
    /// unread), or read with the body limit of its endpoint.
    fn gate(&self, req: &Request) -> Gate<Answer> {
        if let Err(r) = self.access.judge(req) {
            return Gate::Refuse(Answer::text(r.status, r.reason));
        }
        let max_body = if req.method == "POST" && req.path == "/job" {
            self.max_job_body
        } else {
            SMALL_BODY
        };
        Gate::Read { max_body }
    }
}

/// Serves `listener` on a thread of its own (a current-thread runtime): every
/// request on every connection that `rules` let in gets `answer`'s answer, until
/// the returned handle is shut down. A refused request is answered and its
/// connection closed without reading its body (what the client sends anyway is
/// discarded for a moment, bounded, so that its answer is not lost to a reset:
/// [`lingering_close`]); a connection that stays silent or
/// sends too slowly (between requests too) is closed. With `rules.tls`, each
/// connection is a TLS one first ([`crate::tls::accept`]).
pub fn serve_on_thread<A>(
    name: &str,
    listener: std::net::TcpListener,
    rules: ServeRules,
    answer: A,
) -> std::io::Result<pado_h1server::ServerThread>
where
    A: Fn(&Request) -> Answer + Send + Sync + 'static,
{
    let answer = Arc::new(answer);
    let rules = Arc::new(rules);
    pado_h1server::ServerThread::serve_listener(name, listener, move |stream, _| {
        let answer = answer.clone();
        let rules = rules.clone();
        async move {
            match &rules.tls {
                None => serve_connection(stream, &rules, &*answer).await,
                Some(cfg) => {
                    let tls =
                        crate::tls::accept::accept(stream, cfg.clone(), rules.patience.head).await;
                    if let Some(tls) = tls {
                        serve_connection(tls, &rules, &*answer).await;
                    }
                }
            }
        }
    })
}

/// Serves the requests of one connection, plain or TLS, until it ends, is
/// refused, or keeps the server waiting past its patience.
async fn serve_connection<S, A>(mut stream: S, rules: &ServeRules, answer: &A)
where
    S: AsyncRead + AsyncWrite + Unpin,
    A: Fn(&Request) -> Answer,
{
    let mut buf = Vec::new();
    loop {
        let read = read_request_gated(&mut stream, &mut buf, &rules.patience, |req| {
            rules.gate(req)
        })
        .await;
        let (req, a) = match read {
            Ok(Some(Gated::Read(req))) => {
                let a = answer(&req);
                (req, a)
            }
            Ok(Some(Gated::Refused(req, a))) => {
                // The body stays unread; one sent anyway must not reset the answer.
                let unread = Unread::after(&req, buf.len());
                if write_answer(&mut stream, &a, false, req.version, req.is_head()).await {
                    lingering_close(stream, unread, &LINGER).await;
                }
                return;
            }
            Err(ReadError::Malformed(status, why)) => {
                let a = Answer::text(status, why);
                if write_answer(&mut stream, &a, false, 1, false).await {
                    lingering_close(stream, Unread::Unknown, &LINGER).await;
                }
                return;
            }
            Ok(None) | Err(ReadError::Io) => return,
        };
        let keep = req.keep_alive;
        let written = write_answer(&mut stream, &a, keep, req.version, req.is_head()).await;
        if !written || !keep {
            return;
        }
    }
}

/// Writes `a`, saying whether the connection stays open; false when writing failed.
async fn write_answer<S: AsyncWrite + Unpin>(
    stream: &mut S,
    a: &Answer,
    keep: bool,
    version: u8,
    head_only: bool,
) -> bool {
    let mut head = pado_h1server::Head::new(a.status);
    head.header("Content-Type", a.content_type);
    for (k, v) in &a.headers {
        head.header(k, v);
    }
    head.content_length(a.body.len() as u64)
        .connection(pado_h1server::connection_value(keep, version));
    pado_h1server::write_response(stream, head, &a.body, head_only)
        .await
        .is_ok()
}

//! One segment's run as its generator serves it to the coordinator, during the run
//! and after it. The same endpoints on a Kubernetes generator pod and on an agent:
//!
//! - `GET /status`: `{"state":"running","seconds":N}`, then
//!   `{"state":"done","exit_code":N,"error":null}`;
//! - `GET /live?from=T`: the complete lines of the run's `timeline.jsonl` for
//!   seconds `T..` (at most [`crate::feed::MAX_SECONDS_PER_POLL`]), with header
//!   `Pado-State: running|done`; a `done` answer with no lines means the feed has
//!   ended;
//! - `POST /stop`: stop the run gracefully (as Ctrl-C would): the coordinator's
//!   `abort_on_fail`, or its own Ctrl-C;
//! - `GET /result.tar`: the result directory as one tar (409 while running);
//! - `POST /done`: the coordinator has the result.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pado_h1server::Request;
use tokio::sync::Notify;

use crate::archive;
use crate::feed::{TimelineFeed, MAX_SECONDS_PER_POLL};

/// How a run is stopped when the coordinator asks (`POST /stop`).
pub type StopFn = Arc<dyn Fn() + Send + Sync>;

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
}

/// What the server knows of the run.
struct State {
    feed: TimelineFeed,
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
    stop: StopFn,
    done: Notify,
}

impl Job {
    /// The run writing its result directory at `results`; `stop` stops it.
    pub fn new(results: PathBuf, stop: StopFn) -> Job {
        Job {
            state: Mutex::new(State {
                feed: TimelineFeed::new(results.join("timeline.jsonl")),
                exit_code: None,
                tar: None,
                pack_error: None,
                stop_asked: false,
            }),
            results,
            log: None,
            stop,
            done: Notify::new(),
        }
    }

    /// The run's output is in `log`: a run that failed (an exit code other than 0,
    /// or 99 for failed thresholds) shows its last lines in `/status`.
    pub fn with_log(mut self, log: PathBuf) -> Job {
        self.log = Some(log);
        self
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
        self.state.lock().unwrap_or_else(|p| p.into_inner())
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
        let mut s = self.lock();
        let running = s.exit_code.is_none();
        Some(match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/status") => match s.exit_code {
                None => Answer::json(
                    200,
                    &serde_json::json!({"state": "running", "seconds": s.feed.seconds()}),
                ),
                Some(c) => Answer::json(
                    200,
                    &serde_json::json!({"state": "done", "exit_code": c, "error": s.pack_error, "log_tail": self.log_tail(c)}),
                ),
            },
            ("GET", "/live") => {
                let from = match req.query_param("from").map(str::parse::<usize>) {
                    None => 0,
                    Some(Ok(n)) => n,
                    Some(Err(_)) => return Some(Answer::text(400, "from: not a second")),
                };
                match s.feed.lines_from(from, MAX_SECONDS_PER_POLL) {
                    Ok(lines) => Answer {
                        status: 200,
                        content_type: "application/x-ndjson",
                        headers: vec![(
                            "Pado-State",
                            if running { "running" } else { "done" }.into(),
                        )],
                        body: Arc::new(lines),
                    },
                    Err(e) => Answer::text(500, format!("timeline: {e}")),
                }
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

/// Serves `listener` on a thread of its own (a current-thread runtime): every
/// request on every connection (bodies up to `max_body` bytes) gets `answer`'s
/// answer, until the returned handle is shut down.
pub fn serve_on_thread<A>(
    name: &str,
    listener: std::net::TcpListener,
    max_body: u64,
    answer: A,
) -> std::io::Result<pado_h1server::ServerThread>
where
    A: Fn(&Request) -> Answer + Send + Sync + 'static,
{
    let answer = Arc::new(answer);
    pado_h1server::ServerThread::spawn(name, move |stop| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async move {
            let Ok(server) = pado_h1server::Server::from_std(listener) else {
                return;
            };
            server
                .serve(stop, move |mut stream, _| {
                    let answer = answer.clone();
                    async move {
                        let mut buf = Vec::new();
                        while let Ok(Some(req)) =
                            pado_h1server::read_request(&mut stream, &mut buf, max_body).await
                        {
                            let a = answer(&req);
                            if !respond(&mut stream, &req, &a).await {
                                return;
                            }
                        }
                    }
                })
                .await;
        });
    })
}

/// Writes `a` as the response to `req`; false when the connection should close.
async fn respond(stream: &mut tokio::net::TcpStream, req: &Request, a: &Answer) -> bool {
    let mut head = pado_h1server::Head::new(a.status);
    head.header("Content-Type", a.content_type);
    for (k, v) in &a.headers {
        head.header(k, v);
    }
    head.content_length(a.body.len() as u64)
        .connection(pado_h1server::connection_value(req.keep_alive, req.version));
    pado_h1server::write_response(stream, head, &a.body, req.is_head())
        .await
        .is_ok()
        && req.keep_alive
}

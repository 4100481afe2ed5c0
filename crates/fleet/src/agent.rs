//! `pado agent`: a long-lived generator that runs segments a coordinator sends it
//! (`pado run FILE --generators URL,...`), one at a time, as Locust's workers and
//! nGrinder's agents do.
//!
//! - `POST /job` with a [`crate::bundle`] as body: unpacked into a new directory
//!   under the agent's work directory and started (the caller's [`Launch`]); `201`
//!   with `{"job":N}`, or `409` while another job is not yet collected;
//! - then the [`crate::job`] endpoints of that run (`/status` says
//!   `{"state":"idle"}` when there is none);
//! - after `POST /done` the job's directory is removed (the coordinator has the
//!   result) and the agent takes the next job. A job nobody collects within
//!   [`AgentOptions::keep_for`] stays on disk, and the agent takes new jobs.
//!
//! Every request must carry `Authorization: Bearer <token>` (an agent has no
//! tokenless mode: it sends load wherever a scenario says and unpacks files where
//! its work directory is), and no request that looks like a web browser's is
//! answered ([`crate::access`]); both are judged on the head, before a body is read.
//!
//! With [`AgentOptions::tls`] the agent speaks HTTPS only ([`crate::tls`]): the
//! token and the job travel encrypted, and a plain-HTTP request is answered `400`
//! without being read. A connection that stays silent (before its first request,
//! between two kept-alive ones, or in its TLS handshake) is closed after the
//! head's patience.
//!
//! A job's scenario may carry `events:` that run commands (`run:`, `shell:`). Whether
//! the agent runs them is its [`Launch`]'s decision (`pado agent --allow-commands`):
//! it refuses such a job with [`LaunchError::Refused`], answered `403`, before
//! anything starts.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pado_h1server::{Patience, Request, ServerThread};

use crate::access::{Access, Token};
use crate::bundle::{self, JobSpec, MAX_BUNDLE_BYTES};
use crate::job::{serve_on_thread, Answer, ControlFn, Job, ServeRules, StopFn};

/// The environment variable holding the token agents and coordinators share.
pub const TOKEN_ENV: &str = "PADO_AGENT_TOKEN";

/// A started run: how to stop it, and how to wait for its exit code.
pub struct Started {
    /// Stops the run gracefully (as Ctrl-C).
    pub stop: StopFn,
    /// Waits for the run to end; its exit code.
    pub wait: Box<dyn FnOnce() -> i32 + Send>,
    /// How a change of the load reaches the run (`POST /control`), if it can be
    /// steered.
    pub control: Option<ControlFn>,
}

/// Why a job's run was not started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The agent will not run this job (a command it was not started to allow):
    /// answered `403` with the reason, so the coordinator can say it.
    #[error("{0}")]
    Refused(String),
    /// The run could not be started (answered `500`).
    #[error("could not start the run: {0}")]
    Io(#[from] std::io::Error),
}

/// Starts a job's run: `(job, working directory with its files, result directory)`.
pub type Launch =
    Arc<dyn Fn(&JobSpec, &Path, &Path) -> Result<Started, LaunchError> + Send + Sync + 'static>;

/// How the agent runs.
#[derive(Clone)]
pub struct AgentOptions {
    /// Where it listens.
    pub listen: SocketAddr,
    /// Under which each job gets a directory of its own.
    pub work_dir: PathBuf,
    /// The bearer token every request must carry.
    pub token: Token,
    /// The names this host answers to in `Host`, besides its IP addresses and
    /// `localhost` (a request for any other name is refused: DNS rebinding).
    pub host_names: Vec<String>,
    /// How long a request may take to arrive ([`crate::job::PATIENCE`]).
    pub patience: Patience,
    /// How long a finished job's result waits for its coordinator.
    pub keep_for: Duration,
    /// What the agent says as jobs come and go (its log).
    pub say: Arc<dyn Fn(&str) + Send + Sync>,
    /// Serve HTTPS with this configuration (`--tls`, [`crate::tls::AgentIdentity`]);
    /// `None` serves plain HTTP, for loopback and networks you trust.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// The job the agent has now, if any.
struct Current {
    n: u64,
    job: Arc<Job>,
}

struct Agent {
    opts: AgentOptions,
    launch: Launch,
    current: Mutex<Option<Current>>,
    jobs: AtomicU64,
}

/// A running agent.
pub struct AgentHandle {
    server: ServerThread,
    /// The address it listens on (the port chosen when `listen` had port 0).
    pub addr: SocketAddr,
}

impl AgentHandle {
    /// Stops listening (a running job goes on to its end, unwatched).
    pub fn shutdown(self) {
        self.server.shutdown();
    }
}

/// Starts the agent on a thread of its own.
pub fn start(opts: AgentOptions, launch: Launch) -> std::io::Result<AgentHandle> {
    std::fs::create_dir_all(&opts.work_dir)?;
    let listener = std::net::TcpListener::bind(opts.listen)?;
    let addr = listener.local_addr()?;
    let agent = Arc::new(Agent {
        opts,
        launch,
        current: Mutex::new(None),
        jobs: AtomicU64::new(0),
    });
    let rules = ServeRules {
        access: Access {
            token: Some(agent.opts.token.clone()),
            host_names: Some(agent.opts.host_names.clone()),
        },
        max_job_body: MAX_BUNDLE_BYTES,
        patience: agent.opts.patience,
        tls: agent.opts.tls.clone(),
    };
    let server = serve_on_thread("agent", listener, rules, move |req| agent.answer(req))?;
    Ok(AgentHandle { server, addr })
}

impl Agent {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Current>> {
        pado_base::lock(&self.current)
    }

    fn answer(self: &Arc<Self>, req: &Request) -> Answer {
        if req.method == "POST" && req.path == "/job" {
            return self.take_job(req);
        }
        let current = self.lock().as_ref().map(|c| c.job.clone());
        match current {
            Some(job) => job
                .answer(req)
                .unwrap_or_else(|| Answer::text(404, "not found")),
            None if req.method == "GET" && req.path == "/status" => {
                Answer::json(200, &crate::status::Status::Idle.to_json())
            }
            None => Answer::text(409, "no job: the agent is idle"),
        }
    }

    fn take_job(self: &Arc<Self>, req: &Request) -> Answer {
        let mut current = self.lock();
        if let Some(c) = current.as_ref() {
            return Answer::text(
                409,
                format!(
                    "busy: job {} is {} (one job at a time)",
                    c.n,
                    if c.job.exit_code().is_none() {
                        "running"
                    } else {
                        "waiting for its coordinator"
                    }
                ),
            );
        }
        let n = self.jobs.fetch_add(1, Ordering::SeqCst) + 1;
        let dir = self
            .opts
            .work_dir
            .join(format!("job-{}-{n}", std::process::id()));
        if dir.exists() {
            return Answer::text(500, format!("{} exists already", dir.display()));
        }
        let spec = match bundle::unpack(&req.body[..], &dir) {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Answer::text(400, format!("bad job: {e}"));
            }
        };
        let files = dir.join(bundle::FILES_DIR);
        let results = dir.join("result");
        let started = match (self.launch)(&spec, &files, &results) {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                let status = match e {
                    LaunchError::Refused(_) => 403,
                    LaunchError::Io(_) => 500,
                };
                (self.opts.say)(&format!("job {n} not started: {e}"));
                return Answer::text(status, e.to_string());
            }
        };
        (self.opts.say)(&format!(
            "job {n}: segment {} of `{}` started ({})",
            spec.segment,
            spec.test_name,
            dir.display()
        ));
        let mut job = Job::new(results, started.stop).with_log(dir.join(bundle::LOG_FILE));
        if let Some(c) = started.control {
            job = job.with_control(c);
        }
        let job = Arc::new(job);
        *current = Some(Current {
            n,
            job: job.clone(),
        });
        drop(current);
        let agent = self.clone();
        let wait = started.wait;
        std::thread::spawn(move || agent.follow(n, job, dir, wait));
        Answer::json(201, &serde_json::json!({ "job": n }))
    }

    /// Waits for job `n`'s run, then for its coordinator, then makes room.
    fn follow(&self, n: u64, job: Arc<Job>, dir: PathBuf, wait: Box<dyn FnOnce() -> i32 + Send>) {
        let code = wait();
        job.finished(code);
        (self.opts.say)(&format!("job {n}: ended with exit code {code}"));
        let collected = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map(|rt| {
                rt.block_on(async {
                    tokio::time::timeout(self.opts.keep_for, job.collected())
                        .await
                        .is_ok()
                })
            })
            .unwrap_or(false);
        if collected {
            let _ = std::fs::remove_dir_all(&dir);
            (self.opts.say)(&format!("job {n}: collected by its coordinator"));
        } else {
            (self.opts.say)(&format!(
                "job {n}: not collected within {} s; its result stays in {}",
                self.opts.keep_for.as_secs(),
                dir.join("result").display()
            ));
        }
        let mut current = self.lock();
        if current.as_ref().is_some_and(|c| c.n == n) {
            *current = None;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bundle::FileEntry;
    use std::io::{Read, Write};

    fn http(
        addr: SocketAddr,
        method: &str,
        path: &str,
        body: &[u8],
        token: Option<&str>,
    ) -> (u16, Vec<u8>) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}Content-Length: {}\r\n\r\n",
            body.len()
        )
        .unwrap();
        s.write_all(body).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
        (status, out[split + 4..].to_vec())
    }

    /// A launcher that writes the scenario's bytes as the run's only file and
    /// ends when stopped.
    fn launcher() -> Launch {
        Arc::new(|job: &JobSpec, files: &Path, results: &Path| {
            if job.test_name == "refuse me" {
                return Err(LaunchError::Refused("not this one: 파도".into()));
            }
            let scenario = std::fs::read(files.join(&job.args[0]))?;
            std::fs::create_dir_all(results)?;
            std::fs::write(results.join("timeline.jsonl"), b"{\"t\":0}\n")?;
            std::fs::write(results.join("scenario.copy"), scenario)?;
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let tx = Mutex::new(tx);
            // Its control keeps every command it took in `control.log` and refuses
            // the ones that name no action, as a run refuses a bad command.
            let taken = results.join("control.log");
            Ok(Started {
                stop: Arc::new(move || {
                    let _ = tx.lock().unwrap().send(());
                }),
                wait: Box::new(move || {
                    let _ = rx.recv();
                    7
                }),
                control: Some(Arc::new(move |body: &[u8]| {
                    let text = String::from_utf8_lossy(body).into_owned();
                    if !text.contains("\"action\"") {
                        return Err(crate::job::ControlRefusal {
                            status: 400,
                            error: format!("not a command: {text}"),
                        });
                    }
                    let mut f = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&taken)
                        .unwrap();
                    writeln!(f, "{text}").unwrap();
                    Ok(())
                })),
            })
        })
    }

    /// The token of the test agents.
    pub(crate) const TOKEN: &str = "s3cret-s3cret-s3cret";

    /// A test agent on a loopback port of its own, working under `work`.
    pub(crate) fn options(work: &Path) -> AgentOptions {
        AgentOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            work_dir: work.to_path_buf(),
            token: Token::new(TOKEN).unwrap(),
            host_names: Vec::new(),
            patience: crate::job::PATIENCE,
            keep_for: Duration::from_secs(30),
            say: Arc::new(|_| {}),
            tls: None,
        }
    }

    #[test]
    fn takes_one_job_at_a_time_serves_it_and_cleans_up_once_collected() {
        let work = tempfile::tempdir().unwrap();
        let agent = start(options(work.path()), launcher()).unwrap();
        let addr = agent.addr;
        let tok = Some(TOKEN);
        assert_eq!(http(addr, "GET", "/status", b"", None).0, 401, "no token");
        assert_eq!(
            http(addr, "GET", "/status", b"", tok),
            (200, br#"{"state":"idle"}"#.to_vec())
        );
        let job = JobSpec {
            test_name: "파도".into(),
            segment: "0/2".into(),
            args: vec!["s.yaml".into()],
        };
        let tar = bundle::pack(
            &job,
            &[FileEntry {
                path: "s.yaml".into(),
                bytes: "name: 파도\n".as_bytes().to_vec(),
            }],
        )
        .unwrap();
        assert_eq!(http(addr, "POST", "/job", &tar, tok).0, 201);
        let (busy, why) = http(addr, "POST", "/job", &tar, tok);
        assert_eq!(busy, 409, "{}", String::from_utf8_lossy(&why));
        assert_eq!(
            http(addr, "GET", "/live?from=0", b"", tok),
            (200, b"{\"t\":0}\n".to_vec())
        );
        assert_eq!(http(addr, "POST", "/result.tar", b"", tok).0, 404);
        assert_eq!(http(addr, "GET", "/result.tar", b"", tok).0, 409);
        assert_eq!(http(addr, "POST", "/stop", b"", tok).0, 202);
        let status = loop {
            let (_, b) = http(addr, "GET", "/status", b"", tok);
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            if v["state"] == "done" {
                break v;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status["exit_code"], 7);
        let (st, tar) = http(addr, "GET", "/result.tar", b"", tok);
        assert_eq!(st, 200);
        let out = tempfile::tempdir().unwrap();
        crate::archive::unpack(&tar[..], out.path(), 1 << 20).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("scenario.copy")).unwrap(),
            "name: 파도\n"
        );
        assert_eq!(http(addr, "POST", "/done", b"", tok).0, 200);
        // Collected: the job's directory goes and the agent is idle again.
        let mut tries = 0;
        loop {
            let (_, b) = http(addr, "GET", "/status", b"", tok);
            if b == br#"{"state":"idle"}"# {
                break;
            }
            tries += 1;
            assert!(tries < 250, "never idle again");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
        agent.shutdown();
    }

    #[test]
    fn a_bad_bundle_is_refused_with_the_reason() {
        let work = tempfile::tempdir().unwrap();
        let agent = start(options(work.path()), launcher()).unwrap();
        let (st, body) = http(agent.addr, "POST", "/job", b"not a tar", Some(TOKEN));
        assert_eq!(st, 400);
        assert!(String::from_utf8_lossy(&body).starts_with("bad job"));
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
        agent.shutdown();
    }

    fn one_job() -> Vec<u8> {
        let job = JobSpec {
            test_name: "파도".into(),
            segment: "0/1".into(),
            args: vec!["s.yaml".into()],
        };
        let files = [FileEntry {
            path: "s.yaml".into(),
            bytes: b"name: x\n".to_vec(),
        }];
        bundle::pack(&job, &files).unwrap()
    }

    /// Sends `head` (and no body), then reads the answer within 5 s: the status and
    /// whether the agent closed the connection after it.
    fn answer_to_head(addr: SocketAddr, head: &str) -> (u16, String) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(head.as_bytes()).unwrap();
        let mut out = Vec::new();
        // Ends only when the agent closes: an agent waiting for the body would
        // time this read out instead.
        s.read_to_end(&mut out)
            .unwrap_or_else(|e| panic!("no answer before the body was sent: {e}"));
        let text = String::from_utf8_lossy(&out).into_owned();
        let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, text)
    }

    #[test]
    fn a_request_without_its_token_is_answered_401_before_its_body_is_sent() {
        let work = tempfile::tempdir().unwrap();
        let agent = start(options(work.path()), launcher()).unwrap();
        let addr = agent.addr;
        // Six at once, each announcing 256 MiB it never sends: every one is answered
        // at once, so none of the bodies was waited for (nor held in memory).
        let auths = [
            String::new(),
            "Authorization: Bearer s3cret-s3cret-s3creT\r\n".into(),
            "Authorization: Bearer s3cret\r\n".into(),
            "Authorization: Basic s3cret-s3cret-s3cret\r\n".into(),
            format!("Authorization: {TOKEN}\r\n"),
            "Authorization: Bearer\r\n".into(),
        ];
        let handles: Vec<_> = auths
            .into_iter()
            .map(|auth| {
                std::thread::spawn(move || {
                    let head = format!(
                        "POST /job HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: {MAX_BUNDLE_BYTES}\r\n\r\n"
                    );
                    (auth, answer_to_head(addr, &head))
                })
            })
            .collect();
        for h in handles {
            let (auth, (status, text)) = h.join().unwrap();
            assert_eq!(status, 401, "{auth:?}: {text}");
            assert!(text.contains("PADO_AGENT_TOKEN"), "{text}");
            assert!(
                !text.contains("s3cret"),
                "the token is never echoed: {text}"
            );
        }
        // With the token the same head is read on: the agent waits for the body.
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        write!(
            s,
            "POST /job HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n"
        )
        .unwrap();
        let waited = s.read(&mut [0u8; 64]).unwrap_err().kind();
        assert!(
            matches!(
                waited,
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "{waited:?}"
        );
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
        agent.shutdown();
    }

    /// `POST /control` with `body` and `extra` header lines, the answer read
    /// whatever the agent does with the body.
    fn control(addr: SocketAddr, body: &str, extra: &str) -> (u16, String) {
        let head = format!(
            "POST /control HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (status, text) = answer_to_head(addr, &head);
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, body.to_string())
    }

    /// Sends a `POST /control` with the token `auth` and a `len`-byte body without
    /// waiting for the answer to its head (`late`: the body once the answer came).
    fn refused_with_a_body(
        addr: SocketAddr,
        auth: &str,
        len: usize,
        late: bool,
    ) -> Result<(u16, String), String> {
        let head = format!(
            "POST /control HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {auth}\r\n\
             Content-Type: application/json\r\nConnection: close\r\nContent-Length: {len}\r\n\r\n"
        );
        pado_h1server::body_anyway::send_body_anyway(&addr.to_string(), &head, len, late)
    }

    #[test]
    fn a_refused_request_s_body_sent_anyway_does_not_reset_its_answer() {
        let work = tempfile::tempdir().unwrap();
        let agent = start(options(work.path()), launcher()).unwrap();
        // 1 MiB in one write: far more than the agent reads with the head, so most
        // of it is still in the agent's socket when it answers; then a body sent
        // after the refusal has arrived, in two writes.
        for (len, late) in [(1 << 20, false), (64 * 1024, true), (100, true)] {
            let got = refused_with_a_body(agent.addr, "wrong-token-0123456789", len, late);
            let (status, body) = got.unwrap_or_else(|e| panic!("{len} bytes, late {late}: {e}"));
            assert_eq!(status, 401, "{len} bytes, late {late}: {body}");
            assert!(body.contains("PADO_AGENT_TOKEN"), "{body}");
        }
        // With the token, a body too large for a command: `413`, read as surely.
        for (len, late) in [(1 << 20, false), (64 * 1024, true)] {
            let got = refused_with_a_body(agent.addr, TOKEN, len, late);
            let (status, body) = got.unwrap_or_else(|e| panic!("{len} bytes, late {late}: {e}"));
            assert_eq!(status, 413, "{len} bytes, late {late}: {body}");
            assert!(body.contains("too large"), "{body}");
        }
        // The agent still serves the caller with the token.
        assert_eq!(http(agent.addr, "GET", "/status", b"", Some(TOKEN)).0, 200);
        agent.shutdown();
    }

    #[test]
    fn a_control_command_reaches_the_running_job_and_its_refusal_comes_back() {
        let work = tempfile::tempdir().unwrap();
        let agent = start(options(work.path()), launcher()).unwrap();
        let addr = agent.addr;
        let auth = format!("Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n");
        let cmd = r#"{"action":"set_rate_factor","factor":2}"#;
        // No job yet: nothing to steer.
        assert_eq!(control(addr, cmd, &auth).0, 409);
        assert_eq!(http(addr, "POST", "/job", &one_job(), Some(TOKEN)).0, 201);
        let (st, text) = control(addr, cmd, &auth);
        assert_eq!((st, text.as_str()), (200, r#"{"ok":true}"#));
        let (st, text) = control(addr, r#"{"파도":1}"#, &auth);
        assert_eq!(st, 400, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"], r#"not a command: {"파도":1}"#);
        // Once the run has ended, a change is refused and not handed on.
        assert_eq!(http(addr, "POST", "/stop", b"", Some(TOKEN)).0, 202);
        loop {
            let (_, b) = http(addr, "GET", "/status", b"", Some(TOKEN));
            if String::from_utf8_lossy(&b).contains("done") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let (st, text) = control(addr, r#"{"action":"pause"}"#, &auth);
        assert_eq!(st, 409, "{text}");
        assert!(text.contains("ended"), "{text}");
        let (_, tar) = http(addr, "GET", "/result.tar", b"", Some(TOKEN));
        let out = tempfile::tempdir().unwrap();
        crate::archive::unpack(&tar[..], out.path(), 1 << 20).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("control.log")).unwrap(),
            format!("{cmd}\n"),
            "only the command the run took, once"
        );
        agent.shutdown();
    }

    #[test]
    fn a_control_call_without_the_token_or_from_a_browser_is_refused_before_its_body() {
        let work = tempfile::tempdir().unwrap();
        let agent = start(options(work.path()), launcher()).unwrap();
        let addr = agent.addr;
        assert_eq!(http(addr, "POST", "/job", &one_job(), Some(TOKEN)).0, 201);
        let auth = format!("Authorization: Bearer {TOKEN}\r\n");
        // A body is promised and never sent: an answer at all means it was not read.
        for (extra, want) in [
            (String::new(), 401),
            (
                "Authorization: Bearer s3cret-s3cret-s3creT\r\n".to_string(),
                401,
            ),
            (format!("{auth}Origin: http://evil.example\r\n"), 403),
            (format!("{auth}Content-Type: text/plain\r\n"), 403),
            (format!("{auth}Sec-Fetch-Site: cross-site\r\n"), 403),
        ] {
            let head = format!(
                "POST /control HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Length: 1000\r\n\r\n"
            );
            let (status, text) = answer_to_head(addr, &head);
            assert_eq!(status, want, "{extra:?}: {text}");
        }
        // A body larger than a command is refused too, unread.
        let head = format!(
            "POST /control HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: 100000\r\n\r\n"
        );
        assert_eq!(answer_to_head(addr, &head).0, 413);
        let (_, b) = http(addr, "POST", "/stop", b"", Some(TOKEN));
        assert_eq!(b, b"stopping");
        loop {
            let (_, b) = http(addr, "GET", "/status", b"", Some(TOKEN));
            if String::from_utf8_lossy(&b).contains("done") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let (_, tar) = http(addr, "GET", "/result.tar", b"", Some(TOKEN));
        let out = tempfile::tempdir().unwrap();
        crate::archive::unpack(&tar[..], out.path(), 1 << 20).unwrap();
        assert!(
            !out.path().join("control.log").exists(),
            "no refused call reached the run"
        );
        agent.shutdown();
    }

    #[test]
    fn browser_shaped_requests_are_refused_with_403_before_the_body_is_read() {
        let work = tempfile::tempdir().unwrap();
        let mut opts = options(work.path());
        opts.host_names = vec!["gen-1.internal".into()];
        let agent = start(opts, launcher()).unwrap();
        let addr = agent.addr;
        let port = addr.port();
        let auth = format!("Authorization: Bearer {TOKEN}\r\n");
        for (host, extra) in [
            (addr.to_string(), "Origin: http://evil.example\r\n"),
            (addr.to_string(), "Sec-Fetch-Mode: no-cors\r\n"),
            (addr.to_string(), "Sec-Fetch-Site: cross-site\r\n"),
            (addr.to_string(), "Content-Type: text/plain\r\n"),
            (
                addr.to_string(),
                "Content-Type: application/x-www-form-urlencoded\r\n",
            ),
            (
                addr.to_string(),
                "Content-Type: multipart/form-data; boundary=x\r\n",
            ),
            // DNS rebinding: the page's own name, now pointing at the agent.
            (format!("evil.example:{port}"), ""),
        ] {
            let head = format!(
                "POST /job HTTP/1.1\r\nHost: {host}\r\n{auth}{extra}Content-Length: {MAX_BUNDLE_BYTES}\r\n\r\n"
            );
            let (status, text) = answer_to_head(addr, &head);
            assert_eq!(status, 403, "{host} {extra}: {text}");
        }
        // Its own names and addresses are served.
        for host in [
            addr.to_string(),
            format!("localhost:{port}"),
            format!("gen-1.internal:{port}"),
        ] {
            let head =
                format!("GET /status HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n");
            assert_eq!(answer_to_head(addr, &head).0, 200, "{host}");
        }
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
        agent.shutdown();
    }

    #[test]
    fn a_half_sent_head_is_closed_after_the_agent_s_patience() {
        let work = tempfile::tempdir().unwrap();
        let mut opts = options(work.path());
        opts.patience = Patience {
            head: Duration::from_millis(300),
            body_stall: Duration::from_millis(300),
        };
        let agent = start(opts, launcher()).unwrap();
        for sent in [&b"GET /status HTTP/1.1\r\nHost: 127.0"[..], b""] {
            let mut s = std::net::TcpStream::connect(agent.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(sent).unwrap();
            let t0 = std::time::Instant::now();
            let mut out = Vec::new();
            let closed = s.read_to_end(&mut out);
            let took = t0.elapsed();
            assert!(closed.is_ok(), "still open after 5 s: {closed:?}");
            assert!(out.is_empty());
            assert!(
                took >= Duration::from_millis(250) && took < Duration::from_secs(3),
                "{took:?}"
            );
        }
        // A request that keeps moving is still served.
        assert_eq!(http(agent.addr, "GET", "/status", b"", Some(TOKEN)).0, 200);
        agent.shutdown();
    }

    #[test]
    fn a_job_the_launcher_refuses_is_answered_403_with_its_reason_and_nothing_stays() {
        let work = tempfile::tempdir().unwrap();
        let agent = start(options(work.path()), launcher()).unwrap();
        let job = JobSpec {
            test_name: "refuse me".into(),
            segment: "0/1".into(),
            args: vec!["s.yaml".into()],
        };
        let files = [FileEntry {
            path: "s.yaml".into(),
            bytes: b"name: x\n".to_vec(),
        }];
        let tar = bundle::pack(&job, &files).unwrap();
        let (st, why) = http(agent.addr, "POST", "/job", &tar, Some(TOKEN));
        assert_eq!(st, 403);
        assert_eq!(String::from_utf8_lossy(&why), "not this one: 파도");
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
        // Still idle: the next job is taken.
        assert_eq!(
            http(agent.addr, "POST", "/job", &one_job(), Some(TOKEN)).0,
            201
        );
        agent.shutdown();
    }

    /// An agent serving HTTPS with a generated certificate, with `patience`.
    fn tls_agent(work: &Path, patience: Patience) -> (AgentHandle, crate::tls::AgentIdentity) {
        let id = crate::tls::AgentIdentity::generate(&[]).unwrap();
        let mut opts = options(work);
        opts.patience = patience;
        opts.tls = Some(id.config.clone());
        (start(opts, launcher()).unwrap(), id)
    }

    #[test]
    fn a_tls_agent_serves_a_coordinator_that_pinned_it_and_names_a_wrong_pin() {
        use crate::client::{ClientError, GeneratorClient};
        use crate::tls::AgentTrust;
        // One runtime: a client's connection belongs to the runtime it was made on.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let work = tempfile::tempdir().unwrap();
        let (agent, id) = tls_agent(work.path(), crate::job::PATIENCE);
        let url = format!("https://{}", agent.addr);
        let token = Some(TOKEN.to_string());
        let pinned = AgentTrust::Pinned(id.fingerprint);
        let mut c = GeneratorClient::new(&url, token.clone(), &pinned).unwrap();
        let status = rt.block_on(c.status()).unwrap();
        assert_eq!(status, crate::status::Status::Idle);
        // A job goes through TLS too, body and all.
        let mut c = GeneratorClient::new(&agent.addr.to_string(), token.clone(), &pinned).unwrap();
        assert!(c.label().starts_with("https://"), "{}", c.label());
        let job = rt.block_on(c.expect("POST", "/job", &one_job(), Duration::from_secs(10), 201));
        assert!(job.is_ok(), "{job:?}");
        assert_eq!(
            rt.block_on(crate::coordinate::GeneratorLink::stop(&mut c)),
            Ok(())
        );

        // Another agent's fingerprint: refused with both named, nothing sent.
        let other = crate::tls::AgentIdentity::generate(&[])
            .unwrap()
            .fingerprint;
        let mut c = GeneratorClient::new(&url, token.clone(), &AgentTrust::Pinned(other)).unwrap();
        let e = rt.block_on(c.status()).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, ClientError::Transport(..)), "{text}");
        assert!(
            text.contains(&id.fingerprint.to_string())
                && text.contains(&other.to_string())
                && text.contains(&agent.addr.to_string())
                && text.contains("nothing was sent"),
            "{text}"
        );
        assert!(!text.contains(TOKEN), "{text}");
        // Verifying by system roots: a generated certificate is unknown there, and
        // the message says how to trust it.
        let mut c = GeneratorClient::new(&url, token.clone(), &AgentTrust::SystemRoots).unwrap();
        let text = rt.block_on(c.status()).unwrap_err().to_string();
        assert!(text.contains("--agent-fingerprint"), "{text}");
        // Never clear text once a pin is given.
        let e = GeneratorClient::new(&format!("http://{}", agent.addr), token.clone(), &pinned);
        let text = e.err().expect("an http:// agent with a pin").to_string();
        assert!(
            text.contains("https://") && text.contains("clear text"),
            "{text}"
        );
        // A coordinator that speaks plain HTTP to it is told to use https://.
        let mut c = GeneratorClient::new(
            &format!("http://{}", agent.addr),
            token,
            &AgentTrust::SystemRoots,
        )
        .unwrap();
        let a = rt
            .block_on(c.request("GET", "/status", b"", Duration::from_secs(10)))
            .unwrap();
        assert_eq!(a.status, 400);
        assert!(String::from_utf8_lossy(&a.body).contains("https://"));
        agent.shutdown();
    }

    #[test]
    fn a_tls_agent_s_refusal_of_a_body_sent_anyway_is_read_to_its_end() {
        let work = tempfile::tempdir().unwrap();
        let (agent, id) = tls_agent(work.path(), crate::job::PATIENCE);
        let (cfg, _) = crate::tls::AgentTrust::Pinned(id.fingerprint).client_config();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(cfg, name).unwrap();
        let sock = std::net::TcpStream::connect(agent.addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        // A wrong token, and 1 MiB of body in the same write as the head.
        let len = 1 << 20;
        let mut req = format!(
            "POST /control HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer wrong-token-0123456789\r\n\
             Content-Type: application/json\r\nContent-Length: {len}\r\n\r\n",
            agent.addr
        )
        .into_bytes();
        req.resize(req.len() + len, b'x');
        tls.write_all(&req).unwrap();
        tls.flush().unwrap();
        let mut out = Vec::new();
        // To its end: the agent's `close_notify`, not a reset.
        let read = tls.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(read.is_ok(), "{read:?} after {text:?}");
        assert!(
            text.starts_with("HTTP/1.1 401") && text.contains("PADO_AGENT_TOKEN"),
            "{text}"
        );
        agent.shutdown();
    }

    #[test]
    fn a_plain_http_request_to_a_tls_agent_is_refused_unread() {
        let work = tempfile::tempdir().unwrap();
        let (agent, _) = tls_agent(work.path(), crate::job::PATIENCE);
        let head = format!(
            "POST /job HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {MAX_BUNDLE_BYTES}\r\n\r\n",
            agent.addr
        );
        let t0 = std::time::Instant::now();
        let (status, text) = answer_to_head(agent.addr, &head);
        assert_eq!(status, 400, "{text}");
        assert!(
            text.contains(crate::tls::accept::PLAIN_HTTP_REFUSAL),
            "{text}"
        );
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
        agent.shutdown();
    }

    /// Reads a whole answer (head and `Content-Length` body) from `r`.
    fn read_answer(r: &mut impl Read) -> String {
        let mut out = Vec::new();
        let mut b = [0u8; 1024];
        loop {
            let n = r.read(&mut b).unwrap();
            assert!(n > 0, "closed mid-answer");
            out.extend_from_slice(&b[..n]);
            let text = String::from_utf8_lossy(&out).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let len: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap();
                if out.len() >= end + 4 + len {
                    return text;
                }
            }
        }
    }

    /// How long `r` stayed open, read with a 5 s limit: it must end (EOF or a
    /// TLS stream cut without close_notify), not time out.
    fn open_for(r: &mut impl Read) -> Duration {
        let t0 = std::time::Instant::now();
        match r.read(&mut [0u8; 64]) {
            Ok(0) => {}
            Ok(n) => panic!("{n} bytes nobody asked for"),
            Err(e) => assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "still open after 5 s: {e}"
            ),
        }
        t0.elapsed()
    }

    #[test]
    fn an_idle_kept_alive_connection_is_closed_after_the_patience_plain_or_tls() {
        let patience = Patience {
            head: Duration::from_millis(400),
            body_stall: Duration::from_millis(400),
        };
        let within = |took: Duration| {
            assert!(
                took >= Duration::from_millis(250) && took < Duration::from_secs(3),
                "{took:?}"
            );
        };
        let work = tempfile::tempdir().unwrap();
        let get = |addr: SocketAddr| {
            format!("GET /status HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
        };

        // Plain: one request answered and kept alive, then nothing.
        let mut opts = options(work.path());
        opts.patience = patience;
        let plain = start(opts, launcher()).unwrap();
        let mut s = std::net::TcpStream::connect(plain.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(get(plain.addr).as_bytes()).unwrap();
        let first = read_answer(&mut s);
        assert!(
            first.starts_with("HTTP/1.1 200") && first.contains("idle"),
            "{first}"
        );
        assert!(!first.contains("Connection: close"), "kept alive: {first}");
        within(open_for(&mut s));
        plain.shutdown();

        // TLS: the same after a handshake; a silent client, and one that stops in
        // the middle of its ClientHello, are closed too.
        let (agent, id) = tls_agent(work.path(), patience);
        let (cfg, _) = crate::tls::AgentTrust::Pinned(id.fingerprint).client_config();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(cfg, name).unwrap();
        let sock = std::net::TcpStream::connect(agent.addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        tls.write_all(get(agent.addr).as_bytes()).unwrap();
        let first = read_answer(&mut tls);
        assert!(
            first.starts_with("HTTP/1.1 200") && first.contains("idle"),
            "{first}"
        );
        within(open_for(&mut tls));
        for sent in [&b""[..], &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01][..]] {
            let mut s = std::net::TcpStream::connect(agent.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s.write_all(sent).unwrap();
            within(open_for(&mut s));
        }
        agent.shutdown();
    }
}

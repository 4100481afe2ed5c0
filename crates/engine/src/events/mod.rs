//! The scenario's `events:` on the run's clock: each event waits on a thread of its
//! own (never a load worker) for its time — an offset from second 0, or the start
//! of a stage — runs its action (a command, an HTTP call, or just a mark), and for a
//! fault window runs its undo when the window is over, or at once when the run
//! stops early, so that a fault is never left behind.
//!
//! Commands get a timeout and a process group of their own (`command`); HTTP calls
//! go through pado's own client (`http_call`). Every event is written to
//! `events.jsonl` when it is over; outputs are redacted by value (the `{{ env.X }}`
//! values the events used, as [`crate::redact`] does for requests) before they are
//! recorded. A failed action of a required event calls the runner's `on_failure`,
//! which stops the run gracefully.

pub mod command;
pub mod http_call;
pub mod open_windows;
pub mod render;
pub mod shell_quote;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use pado_results::events::{ActionRecord, EventRecord, EventsWriter, ExpectRecord, Outcome};
use pado_results::StageMark;
use pado_scenario::events::{Event, EventHttp, DEFAULT_EVENT_TIMEOUT};
use pado_scenario::Config;

use crate::redact::Redactor;
use http_call::HttpCall;
pub use open_windows::{env_names, resolve_undo, run_undo, WindowLedger};
use render::ActionRenderer;

/// Why the events of a scenario could not be prepared (before anything runs).
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct EventError {
    /// The field, e.g. `events[0].run[1]`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// What an action does, resolved.
#[derive(Clone, Debug)]
pub enum Action {
    /// A program and its arguments (`shell` is `sh -c LINE`).
    Command(Vec<String>),
    /// An HTTP call.
    Http(HttpCall),
}

/// One event, ready to run.
#[derive(Clone, Debug)]
pub struct EventSpec {
    /// Its position in the scenario's `events:`.
    pub index: usize,
    /// Name.
    pub name: String,
    /// `run`, `shell`, `http` or `mark`.
    pub kind: String,
    /// When, from second 0.
    pub at: Duration,
    /// The action (none for a mark).
    pub action: Option<(String, Action)>,
    /// The mark's text.
    pub mark: Option<String>,
    /// Length of the window.
    pub duration: Option<Duration>,
    /// The undo (kind, action).
    pub undo: Option<(String, Action)>,
    /// The undo as the scenario wrote it (templates unrendered, no secret value):
    /// what an open window's record keeps so that a later pado can run it again.
    pub undo_source: Option<serde_json::Value>,
    /// The environment variables the undo reads, by name.
    pub undo_env: Vec<String>,
    /// Deadline of the action and of the undo.
    pub timeout: Duration,
    /// Whether a failure stops the run.
    pub required: bool,
    /// The expectations as written.
    pub expect: ExpectRecord,
}

/// A scenario's events, ready to run, with the secret values to hide.
#[derive(Clone, Debug, Default)]
pub struct EventPlan {
    /// The events, in file order.
    pub events: Vec<EventSpec>,
    /// Values from the environment the events use.
    pub redactor: Redactor,
    /// The scenario's `target` (what a relative `http:` URL is joined to).
    pub target: Option<String>,
}

impl EventPlan {
    /// Whether there is nothing to run.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// An event's action (or undo) resolved: its kind and what runs, `None` when it
/// sets no `run`, `shell` or `http` (a mark).
pub(crate) fn action(
    field: &str,
    run: Option<&[String]>,
    shell: Option<&str>,
    h: Option<&EventHttp>,
    target: Option<&str>,
    secrets: &mut Vec<Vec<u8>>,
) -> Result<Option<(String, Action)>, EventError> {
    let mut r = ActionRenderer::new(None, secrets);
    if let Some((kind, argv)) = r.argv(field, run, shell)? {
        return Ok(Some((kind.into(), Action::Command(argv))));
    }
    if let Some(h) = h {
        return Ok(Some((
            "http".into(),
            Action::Http(r.http(&format!("{field}.http"), h, target)?),
        )));
    }
    Ok(None)
}

fn expect_record(e: &Event) -> ExpectRecord {
    ExpectRecord {
        during: e
            .during
            .iter()
            .map(|(k, v)| (k.clone(), v.list()))
            .collect(),
        recovers: e
            .after
            .as_ref()
            .and_then(|a| a.recovers.as_ref())
            .map(|r| r.list())
            .unwrap_or_default(),
        hold_s: e
            .after
            .as_ref()
            .and_then(|a| a.hold)
            .map(|d| d.get().as_secs_f64()),
        no_errors_after_s: e
            .after
            .as_ref()
            .and_then(|a| a.no_errors_after)
            .map(|d| d.get().as_secs_f64()),
    }
}

/// Resolves a validated scenario's events: their times (a stage's start from
/// `stages`, the run's stage marks), `{{ env.X }}` values and URLs.
pub fn compile_events(config: &Config, stages: &[StageMark]) -> Result<EventPlan, EventError> {
    let mut secrets = Vec::new();
    let mut events = Vec::new();
    let target = config.target.as_deref();
    for (i, e) in config.events.iter().enumerate() {
        let field = format!("events[{i}]");
        let at = match (e.at, e.at_stage) {
            (Some(d), _) => d.get(),
            (None, Some(n)) => {
                let scenario = match &e.scenario {
                    Some(s) => Some(s.clone()),
                    None => config
                        .scenarios
                        .iter()
                        .find(|(_, sc)| sc.stages.is_some())
                        .map(|(name, _)| name.clone()),
                };
                let mark = stages
                    .iter()
                    .find(|m| Some(&m.scenario) == scenario.as_ref() && m.index + 1 == n as usize);
                match mark {
                    Some(m) => Duration::from_secs_f64(m.start_s.max(0.0)),
                    None => {
                        return Err(EventError {
                            field: format!("{field}.at_stage"),
                            message: format!("stage {n} does not exist"),
                        })
                    }
                }
            }
            (None, None) => Duration::ZERO,
        };
        let act = action(
            &field,
            e.run.as_deref(),
            e.shell.as_deref(),
            e.http.as_ref(),
            target,
            &mut secrets,
        )?;
        let undo = match &e.undo {
            Some(u) => action(
                &format!("{field}.undo"),
                u.run.as_deref(),
                u.shell.as_deref(),
                u.http.as_ref(),
                target,
                &mut secrets,
            )?,
            None => None,
        };
        events.push(EventSpec {
            index: i,
            name: e.display_name(i),
            kind: e.kind().into(),
            at,
            action: act,
            mark: e.mark.clone(),
            duration: e.duration.map(|d| d.get()),
            undo,
            undo_source: e.undo.as_ref().and_then(|u| serde_json::to_value(u).ok()),
            undo_env: e.undo.as_ref().map(env_names).unwrap_or_default(),
            timeout: e.timeout.map_or(DEFAULT_EVENT_TIMEOUT, |d| d.get()),
            required: e.is_required(),
            expect: expect_record(e),
        });
    }
    Ok(EventPlan {
        events,
        redactor: Redactor::new(secrets),
        target: target.map(str::to_string),
    })
}

/// Runs one action or undo, timed from `t0`, its outputs masked by `redactor`.
/// `stop` (an action's, never an undo's) cuts a running command short when the run
/// ends: the run's end is not held up by it, and the undo that follows is what puts
/// things back.
pub(crate) fn perform(
    redactor: &Redactor,
    t0: Instant,
    kind: &str,
    a: &Action,
    timeout: Duration,
    stop: Option<&Receiver<()>>,
) -> ActionRecord {
    let now_ms = || t0.elapsed().as_millis() as u64;
    let started_ms = now_ms();
    let mut rec = ActionRecord {
        kind: kind.into(),
        started_ms,
        ended_ms: started_ms,
        outcome: Outcome::Ok,
        exit_code: None,
        status: None,
        error: None,
        stdout: String::new(),
        stderr: String::new(),
    };
    match a {
        Action::Command(argv) => {
            // Kept with a margin of the longest secret and masked before it is
            // cut to what is shown: a secret straddling the cut shows nothing.
            let keep = command::TAIL_BYTES + redactor.longest();
            let r = command::run_command(argv, keep, timeout, stop);
            rec.exit_code = r.exit_code;
            rec.stdout = tail(redactor, &r.stdout);
            rec.stderr = tail(redactor, &r.stderr);
            if let Some(e) = r.spawn_error {
                rec.outcome = Outcome::Failed;
                rec.error =
                    Some(String::from_utf8_lossy(&redactor.redact(e.as_bytes())).into_owned());
            } else if r.stopped {
                rec.outcome = Outcome::Stopped;
                rec.error =
                    Some("still running when the run ended: killed with its process group".into());
            } else if r.timed_out {
                rec.outcome = Outcome::Timeout;
                rec.error = Some(format!(
                    "timed out after {} (killed with its process group)",
                    pado_base::units::duration(timeout.as_secs_f64())
                ));
            } else if r.exit_code != Some(0) {
                rec.outcome = Outcome::Failed;
                if r.exit_code.is_none() {
                    rec.error = Some("killed by a signal".into());
                }
            }
        }
        Action::Http(call) => {
            let r = call.send(timeout);
            // The call's own credential headers too: an endpoint that echoes
            // the request (a debug route, an error page) does not record them.
            let redactor = redactor.with(call.credentials());
            let mut body = r.body;
            if body.len() >= http_call::MAX_ANSWER {
                // The answer was cut: its last bytes may begin a secret.
                body.truncate(body.len() - redactor.longest().saturating_sub(1));
            }
            rec.stdout = tail(&redactor, &body);
            if r.status > 0 {
                rec.status = Some(r.status);
            }
            match r.error {
                Some(e) if e == "timeout" => {
                    rec.outcome = Outcome::Timeout;
                    rec.error = Some(format!(
                        "no answer within {}",
                        pado_base::units::duration(timeout.as_secs_f64())
                    ));
                }
                Some(e) => {
                    rec.outcome = Outcome::Failed;
                    rec.error = Some(e);
                }
                None if !(200..300).contains(&r.status) => rec.outcome = Outcome::Failed,
                None => {}
            }
        }
    }
    rec.ended_ms = now_ms();
    rec
}

/// The last [`command::TAIL_BYTES`] of an output, masked before it is cut.
fn tail(r: &Redactor, b: &[u8]) -> String {
    String::from_utf8_lossy(&r.suffix(b, command::TAIL_BYTES)).into_owned()
}

/// What the events did, once the runner is finished.
#[derive(Debug, Default)]
pub struct EventsDone {
    /// Every event, as written to `events.jsonl`.
    pub records: Vec<EventRecord>,
    /// Why required events failed (each one sentence).
    pub failures: Vec<String>,
    /// `events.jsonl` could not be written.
    pub write_error: Option<String>,
}

struct Shared {
    writer: Mutex<EventsWriter>,
    done: Mutex<EventsDone>,
    on_failure: Box<dyn Fn(&str) + Send + Sync>,
    redactor: Redactor,
    t0: Instant,
    ledger: Option<Arc<dyn WindowLedger>>,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// Waits until `at` after second 0; false when the run is over first.
    fn wait_until(&self, cancel: &Receiver<()>, at: Duration) -> bool {
        loop {
            let left = at.saturating_sub(self.t0.elapsed());
            if left.is_zero() {
                return true;
            }
            match cancel.recv_timeout(left) {
                Err(RecvTimeoutError::Timeout) => {}
                // Nothing is ever sent: the sender dropped means the run is over.
                _ => return false,
            }
        }
    }

    /// Runs one action or undo on the run's clock (see [`perform`]).
    fn perform(
        &self,
        kind: &str,
        a: &Action,
        timeout: Duration,
        stop: Option<&Receiver<()>>,
    ) -> ActionRecord {
        perform(&self.redactor, self.t0, kind, a, timeout, stop)
    }

    fn report_failure(&self, name: &str, what: &str, r: &ActionRecord, required: bool) {
        if matches!(r.outcome, Outcome::Ok | Outcome::Skipped | Outcome::Stopped) {
            return;
        }
        let why = match (&r.error, r.exit_code, r.status) {
            (Some(e), _, _) => e.clone(),
            (None, Some(c), _) => format!("exit code {c}"),
            (None, None, Some(s)) => format!("answered {s}"),
            _ => "failed".into(),
        };
        let msg = format!("event `{name}`: {what} failed: {why}");
        if required {
            (self.on_failure)(&msg);
        }
        pado_base::lock(&self.done).failures.push(if required {
            msg
        } else {
            format!("{msg} (not required: the run went on)")
        });
    }

    fn finish_event(&self, rec: EventRecord) {
        let r = pado_base::lock(&self.writer).write(&rec);
        let mut d = pado_base::lock(&self.done);
        if let Err(e) = r {
            d.write_error.get_or_insert(e.to_string());
        }
        d.records.push(rec);
    }

    fn run_event(&self, e: &EventSpec, cancel: &Receiver<()>) {
        let mut rec = EventRecord {
            name: e.name.clone(),
            kind: e.kind.clone(),
            planned_ms: e.at.as_millis() as u64,
            started_ms: None,
            window_end_ms: None,
            required: e.required,
            mark: e.mark.clone(),
            action: None,
            undo: None,
            expect: e.expect.clone(),
            left_open: None,
        };
        if !self.wait_until(cancel, e.at) {
            if let Some((kind, _)) = &e.action {
                rec.action = Some(ActionRecord {
                    kind: kind.clone(),
                    started_ms: self.now_ms(),
                    ended_ms: self.now_ms(),
                    outcome: Outcome::Skipped,
                    exit_code: None,
                    status: None,
                    error: Some("the run ended before its time".into()),
                    stdout: String::new(),
                    stderr: String::new(),
                });
            }
            self.finish_event(rec);
            return;
        }
        let start = self.now_ms();
        rec.started_ms = Some(start);
        // A window with an undo is on record before its action starts: a pado killed
        // from here on leaves what a later pado needs to undo it.
        let ledger = self
            .ledger
            .as_ref()
            .filter(|_| e.duration.is_some() && e.undo.is_some());
        if let Some(l) = ledger {
            l.opened(e, start);
        }
        if let Some((kind, a)) = &e.action {
            let r = self.perform(kind, a, e.timeout, Some(cancel));
            self.report_failure(&e.name, "its action", &r, e.required);
            rec.action = Some(r);
        }
        if let Some(d) = e.duration {
            // The fault is surely in force once its action has answered: the window
            // lasts `duration` from then, so that a slow action (a loaded machine, a
            // slow API) does not shorten its window, or leave none at all.
            let from = rec.action.as_ref().map_or(start, |a| a.ended_ms);
            let end = Duration::from_millis(from) + d;
            self.wait_until(cancel, end);
            match &e.undo {
                Some((kind, a)) => {
                    let r = self.perform(kind, a, e.timeout, None);
                    self.report_failure(&e.name, "its undo", &r, e.required);
                    rec.window_end_ms = Some(r.ended_ms);
                    rec.undo = Some(r);
                    if let Some(l) = ledger {
                        l.closed(e);
                    }
                }
                None => rec.window_end_ms = Some(self.now_ms().min(end.as_millis() as u64)),
            }
        }
        self.finish_event(rec);
    }
}

/// The events of a run, each waiting on its own thread.
pub struct EventRunner {
    cancel: Option<Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl EventRunner {
    /// Starts every event's thread on the clock that began at `t0` (second 0 of
    /// the run). `on_failure` is called with a sentence when a required event's
    /// action fails (from that event's thread); `ledger`, when given, is told each
    /// fault window with an undo as it opens and once it is undone.
    pub fn start(
        plan: EventPlan,
        t0: Instant,
        writer: EventsWriter,
        on_failure: Box<dyn Fn(&str) + Send + Sync>,
        ledger: Option<Arc<dyn WindowLedger>>,
    ) -> EventRunner {
        let (tx, rx) = crossbeam_channel::bounded::<()>(0);
        let shared = Arc::new(Shared {
            writer: Mutex::new(writer),
            done: Mutex::new(EventsDone::default()),
            on_failure,
            redactor: plan.redactor,
            t0,
            ledger,
        });
        let threads = plan
            .events
            .into_iter()
            .map(|e| {
                let shared = shared.clone();
                let rx = rx.clone();
                std::thread::Builder::new()
                    .name("pado-event".into())
                    .spawn(move || shared.run_event(&e, &rx))
                    .expect("spawning an event thread")
            })
            .collect();
        EventRunner {
            cancel: Some(tx),
            threads,
            shared,
        }
    }

    /// Ends the events once the load is over: events whose time has not come are
    /// recorded as skipped, running commands are killed with their process group
    /// (recorded as stopped), open windows are undone now (each undo bounded by its
    /// timeout). Returns what happened.
    pub fn finish(mut self) -> EventsDone {
        self.cancel.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let mut d = std::mem::take(&mut *pado_base::lock(&self.shared.done));
        d.records.sort_by_key(|r| r.planned_ms);
        d
    }
}

#[cfg(test)]
mod tests;

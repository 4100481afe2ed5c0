//! One test on many `pado agent`s (`pado run FILE --generators URL,...`): every
//! agent idle and reachable first; each sent its job bundle (the files and its
//! segment's `pado run` flags with one agreed start), and should one refuse, those
//! already started are stopped; the live loop ([`crate::coordinate::watch`]) hands
//! the merged seconds to the caller's [`LiveSink`] (which may stop them all), as
//! Ctrl-C does; then each agent's result is fetched into `segment-I-of-N` under
//! [`AgentsOptions::out`] and the agent told `/done`, so it drops its copy and
//! takes the next job. The flow returns what it [`Collected`]; the caller merges.
//!
//! Every wait is bounded: the live loop by the planned end, the longest graceful
//! stop and [`AgentsOptions::margin`]; the wait for each result by a margin more.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use crate::bundle::{self, FileEntry, JobSpec};
use crate::client::{ClientError, GeneratorClient, REQUEST_TIMEOUT};
use crate::flow::{live_options, watch_live, Collected, LiveSink, MissingSegment, Say};
use crate::status::Status;

/// The agents of one test, in segment order, each with the name people read.
pub struct Agents {
    clients: Vec<GeneratorClient>,
    names: Vec<String>,
}

impl Agents {
    /// Agent `i` of `clients` runs segment `i/N`.
    pub fn new(clients: Vec<GeneratorClient>) -> Agents {
        let n = clients.len();
        let names = clients
            .iter()
            .enumerate()
            .map(|(i, c)| format!("generator {i}/{n} ({})", c.label()))
            .collect();
        Agents { clients, names }
    }

    /// Each agent as messages name it: `generator 0/2 (http://10.0.0.5:7070)`.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The names of the agents whose run failed ([`Collected::failed_runs`]),
    /// with their exit codes, or `Ok` when every run completed.
    pub fn judge_runs(&self, c: &Collected) -> Result<(), RunsFailed> {
        let failed: Vec<String> = c
            .failed_runs()
            .map(|(i, code)| {
                let name = self.names.get(i as usize).map_or("?", String::as_str);
                format!("{name} (exit code {code})")
            })
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(RunsFailed(failed))
        }
    }
}

/// Agents whose run failed (an exit code other than 0 or 99): the test fails
/// whatever the merged seconds say, since their share may be missing or wrong and
/// a script reading only the exit code must not see success.
#[derive(Debug, thiserror::Error)]
#[error(
    "the run failed on {}: the merged result leaves out or cuts short what it measured",
    .0.join(", ")
)]
pub struct RunsFailed(pub Vec<String>);

/// What every agent runs.
#[derive(Clone, Debug)]
pub struct AgentsJob {
    /// The test's name, for the agents' logs.
    pub test_name: String,
    /// The scenario and the files it reads.
    pub files: Vec<FileEntry>,
    /// The `pado run` flags every segment runs with.
    pub args: Vec<String>,
    /// Flags only segment 0 runs with (`--observe`: one scraper for the test).
    pub first_args: Vec<String>,
    /// `--segment-weights` for every segment, when the load is split unevenly.
    pub segment_weights: Option<String>,
    /// The agreed start (second 0 of every segment).
    pub start_at: SystemTime,
    /// `start_at` as the jobs' `--start-at` gives it (UTC, to the millisecond).
    pub start_stamp: String,
    /// The planned length and the longest graceful stop.
    pub run_for: Duration,
}

impl AgentsJob {
    /// Segment `i` of `n`'s `pado run` flags.
    fn args_of(&self, i: usize, n: usize) -> Vec<String> {
        let mut args = self.args.clone();
        args.extend(["--segment".into(), format!("{i}/{n}")]);
        if let Some(w) = &self.segment_weights {
            args.extend(["--segment-weights".into(), w.clone()]);
        }
        args.extend(["--start-at".into(), self.start_stamp.clone()]);
        if i == 0 {
            args.extend(self.first_args.iter().cloned());
        }
        args
    }
}

/// Where the results go and how long the flow waits.
#[derive(Clone, Debug)]
pub struct AgentsOptions {
    /// The local directory for the segments' results (`segment-I-of-N` each).
    pub out: PathBuf,
    /// Time between polls of the live feeds.
    pub poll: Duration,
    /// Time between looks at an agent's status while its run ends.
    pub status_every: Duration,
    /// How long an agent may send no new second before the live view goes on
    /// without it.
    pub stall_after: Duration,
    /// After the planned end and the graceful stop: how long the live view
    /// waits, and then as long again for the results.
    pub margin: Duration,
    /// Say only warnings.
    pub quiet: bool,
}

impl AgentsOptions {
    /// Defaults for a test writing its segments under `out`.
    pub fn new(out: PathBuf) -> AgentsOptions {
        AgentsOptions {
            out,
            poll: Duration::from_secs(1),
            status_every: Duration::from_millis(500),
            stall_after: Duration::from_secs(30),
            margin: Duration::from_secs(60),
            quiet: false,
        }
    }
}

/// Why the flow ended without results to merge.
#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    /// An agent did not answer before anything started.
    #[error("{name}: {source}")]
    Unreachable {
        /// The agent.
        name: String,
        /// Why.
        source: ClientError,
    },
    /// An agent has another job.
    #[error("{name} is busy with another job (\"{state}\"); wait for it or choose another agent")]
    Busy {
        /// The agent.
        name: String,
        /// Its `/status` state (`running`, `done`).
        state: &'static str,
    },
    /// An agent did not take its job; those already started were stopped.
    #[error("{name}: {reason}")]
    NotStarted {
        /// The agent.
        name: String,
        /// Why (the agent's answer, or the bundle that could not be made).
        reason: String,
    },
    /// No agent's result could be fetched.
    #[error("no generator's result could be collected (see above); nothing to merge in {}", .0.display())]
    NothingCollected(PathBuf),
}

/// Runs `job` on `agents`: checks they are idle, sends the jobs, shows the merged
/// seconds to `live` (which may stop them all, as a first Ctrl-C counted in
/// `interrupts` does), then fetches every result into `opts.out` and tells each
/// agent it has it. Returns what was collected, for the caller to merge.
pub async fn run(
    agents: &mut Agents,
    job: &AgentsJob,
    opts: &AgentsOptions,
    interrupts: watch::Receiver<u32>,
    say: Say,
    live: &mut dyn LiveSink,
) -> Result<Collected, AgentsError> {
    agents.check_idle().await?;
    agents.send_jobs(job).await?;
    let n = agents.clients.len();
    if !opts.quiet {
        say(&format!(
            "{n} generators start at {}; Ctrl-C stops them all",
            job.start_stamp
        ));
    }
    let lopts = live_options(
        job.start_at,
        job.run_for,
        opts.poll,
        opts.stall_after,
        opts.margin,
    );
    let mut asked = false;
    let outcome = watch_live(
        &mut agents.clients,
        &lopts,
        live,
        || {
            if !asked && *interrupts.borrow() > 0 {
                asked = true;
                return Some("Ctrl-C".to_string());
            }
            None
        },
        |_| {},
    )
    .await;
    live.finish();
    let mut collected = agents
        .collect(opts, lopts.deadline + opts.margin, &say)
        .await;
    collected.live_seconds = outcome.seconds;
    collected.stopped = outcome.stopped;
    collected.interrupted = asked;
    collected.live_timed_out = outcome.timed_out;
    if outcome.timed_out {
        say("warning: the live view ended at the planned end plus the graceful stop; some generators had not finished");
    }
    if collected.dirs.is_empty() {
        return Err(AgentsError::NothingCollected(opts.out.clone()));
    }
    Ok(collected)
}

impl Agents {
    /// Every agent idle and reachable before anything starts.
    async fn check_idle(&mut self) -> Result<(), AgentsError> {
        for (c, name) in self.clients.iter_mut().zip(&self.names) {
            let v = c
                .status()
                .await
                .map_err(|source| AgentsError::Unreachable {
                    name: name.clone(),
                    source,
                })?;
            if v != Status::Idle {
                return Err(AgentsError::Busy {
                    name: name.clone(),
                    state: v.state(),
                });
            }
        }
        Ok(())
    }

    /// Sends each agent its segment's job. Should one not take it, those already
    /// started are stopped, so nothing half-started is left behind.
    async fn send_jobs(&mut self, job: &AgentsJob) -> Result<(), AgentsError> {
        let n = self.clients.len();
        for i in 0..n {
            let spec = JobSpec {
                test_name: job.test_name.clone(),
                segment: format!("{i}/{n}"),
                args: job.args_of(i, n),
            };
            let sent = match bundle::pack(&spec, &job.files) {
                Ok(tar) => self.clients[i]
                    .expect("POST", "/job", &tar, REQUEST_TIMEOUT, 201)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(reason) = sent {
                for c in &mut self.clients[..i] {
                    let _ = c.request("POST", "/stop", b"", REQUEST_TIMEOUT).await;
                }
                return Err(AgentsError::NotStarted {
                    name: self.names[i].clone(),
                    reason,
                });
            }
        }
        Ok(())
    }

    /// Waits for each agent's run to end (until `deadline`), fetches its result
    /// into `out/segment-I-of-N`, and tells it so. An agent whose result could not
    /// be had is said and listed missing (the merge names its segment).
    async fn collect(&mut self, opts: &AgentsOptions, deadline: Instant, say: &Say) -> Collected {
        let n = self.clients.len();
        let mut out = Collected::default();
        for (i, c) in self.clients.iter_mut().enumerate() {
            let name = &self.names[i];
            let Some((code, log_tail)) = ended(c, name, deadline, opts.status_every, say).await
            else {
                out.missing
                    .push(MissingSegment::new(i, n as u32, "its run had not ended"));
                continue;
            };
            out.exit_codes.insert(i as u32, code);
            if let Some(tail) = log_tail.as_deref() {
                // The agent's output is its text, not ours: a hostile or broken agent
                // must not drive the terminal with escape sequences.
                say(&format!(
                    "warning: {name}: its run failed (exit code {code}); its last output:\n{}",
                    pado_base::text::terminal_safe(tail)
                ));
            }
            let dir = opts
                .out
                .join(pado_base::names::segment_dir(i as u64, Some(n as u64)));
            match fetch(c, &dir).await {
                Ok(()) if dir.join("run.json").exists() => out.dirs.push(dir),
                Ok(()) => {
                    if !opts.quiet {
                        say(&format!("warning: {name}: its run wrote no result"));
                    }
                    out.missing
                        .push(MissingSegment::new(i, n as u32, "its run wrote no result"));
                }
                Err(e) => {
                    say(&format!("warning: {name}: {e}"));
                    out.missing.push(MissingSegment::new(i, n as u32, &e));
                }
            }
        }
        out
    }
}

/// The agent's run's exit code and, for a failed run, its output's last lines,
/// once the run has ended; `None` (said) when it had not by `deadline`.
async fn ended(
    c: &mut GeneratorClient,
    name: &str,
    deadline: Instant,
    every: Duration,
    say: &Say,
) -> Option<(i32, Option<String>)> {
    loop {
        match c.status().await {
            Ok(Status::Done {
                exit_code,
                log_tail,
                ..
            }) => return Some((exit_code, log_tail)),
            Ok(_) => {}
            Err(e) if Instant::now() >= deadline => {
                say(&format!("warning: {name}: {e}"));
                return None;
            }
            Err(_) => {}
        }
        if Instant::now() >= deadline {
            say(&format!("warning: {name}: its run had not ended by the planned end plus the graceful stop and a margin"));
            return None;
        }
        tokio::time::sleep(every).await;
    }
}

/// Fetches the agent's result into `dir`, then tells it `/done` (it drops its copy).
async fn fetch(c: &mut GeneratorClient, dir: &std::path::Path) -> Result<(), String> {
    let tar = c.result_tar().await.map_err(|e| e.to_string())?;
    crate::archive::unpack(&tar[..], dir, crate::archive::DEFAULT_MAX_BYTES)
        .map_err(|e| format!("its result could not be unpacked: {e}"))?;
    let _ = c.request("POST", "/done", b"", REQUEST_TIMEOUT).await;
    Ok(())
}

#[cfg(test)]
mod tests;

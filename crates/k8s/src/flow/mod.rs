//! The coordinator: create the test's objects, watch its pods, show the whole test
//! live, collect every segment's result directory, always clean up, and return
//! what was collected (`pado_fleet::flow::Collected`) for the caller to merge. Every wait is bounded: a pod stuck Pending is named with its reason, a
//! segment that never reports is named missing, and a Ctrl-C stops the generators.
//!
//! Two loops run side by side: the collect loop (pods, status, results) and the live
//! loop (`pado_fleet::coordinate::watch` over each pod's `/live` feed through the pod
//! proxy, [`crate::live`]), which hands each merged second of the whole test to the
//! caller's [`LiveSink`] (the hand-off every coordinator flow shares,
//! `pado_fleet::flow`). When the sink says stop (an `abort_on_fail` threshold
//! failed on the merged seconds), every pod gets `POST /stop`, stops its run
//! gracefully and reports; the flow collects them at once and returns them with
//! [`Collected::stopped`] set (the caller merges such a run as partial). A generator's
//! log is not followed: the last lines of a pod that failed are said instead.
//!
//! Ctrl-C: the first stops the generators the same way (`POST /stop`); a segment the
//! stop cannot reach (its pod not running yet, out of the live view, or the stop
//! refused) is stopped by deleting the Job, so its generator gets SIGTERM, stops its
//! run gracefully and keeps serving what it wrote during its termination grace. The
//! flow collects what it can for [`FlowOptions::interrupt_grace`], names the rest,
//! and returns with [`Collected::interrupted`] set. The second stops collecting at
//! once: clean up, no merge ([`FlowError::Interrupted`]).
//!
//! Modules: `objects` (the test's API objects: create, delete, and a pod's
//! status, result and log through the API server), `collect` (the collect loop),
//! `pods` (what a pod's status says: its index, why it is Pending, how it ended).

mod collect;
mod objects;
mod pods;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use crate::cluster::Clients;
use crate::live::{PodLink, PodSteering, Shared};
use crate::spec::{GeneratorSpec, SpecError};
use pado_fleet::archive;
use pado_fleet::flow::{live_options, watch_live, Collected, LiveSink, MissingSegment, Say};

use objects::Objects;
pub use pods::pending_reason;

/// How the coordinator waits and where it puts the results.
#[derive(Clone, Debug)]
pub struct FlowOptions {
    /// Local directory for the collected results, one `segment-<i>` each.
    pub local_dir: PathBuf,
    /// Time between looks at the pods, and between polls of their live feeds.
    pub poll: Duration,
    /// How long a generator's feed may go without a new second (past the start)
    /// before the live view goes on without it (its result is still collected).
    pub live_stall_after: Duration,
    /// Longest a segment's pod may stay Pending (or uncreated) before the run fails
    /// naming it and its reason.
    pub pending_timeout: Duration,
    /// Slack after the planned end (start, run, graceful stop) for a segment to
    /// report its result before it is named missing.
    pub finish_timeout: Duration,
    /// After the first Ctrl-C, how long to keep collecting.
    pub interrupt_grace: Duration,
    /// Most bytes one segment's result may be.
    pub max_result_bytes: u64,
    /// Lines of a failed pod's log to say (its last ones), prefixed `[i/N]`.
    pub failed_log_lines: i64,
    /// How a change of the load (a dashboard's) reaches the test's pods while it
    /// runs: the caller keeps a clone to send with; the flow attaches it to the
    /// pods and detaches it at the end. The default reaches nothing until a flow
    /// attaches it, and nobody sends on it unless the caller does.
    pub steering: PodSteering,
}

impl FlowOptions {
    /// Defaults for a run writing its segments under `local_dir`.
    pub fn new(local_dir: PathBuf) -> FlowOptions {
        FlowOptions {
            local_dir,
            poll: Duration::from_secs(1),
            live_stall_after: Duration::from_secs(30),
            pending_timeout: Duration::from_secs(300),
            finish_timeout: Duration::from_secs(120),
            interrupt_grace: Duration::from_secs(60),
            max_result_bytes: archive::DEFAULT_MAX_BYTES,
            failed_log_lines: 20,
            steering: PodSteering::default(),
        }
    }
}

/// Why a flow ended without a merge.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// The spec cannot make manifests.
    #[error("{0}")]
    Spec(#[from] SpecError),
    /// Creating an object failed (permissions, quota, an existing name).
    #[error("could not create {what}: {source}")]
    Create {
        /// The object (`ConfigMap pado-x`).
        what: String,
        /// The API's answer.
        source: kube::Error,
    },
    /// The API server could not be asked about the pods.
    #[error("could not list the generator pods: {0}")]
    Watch(kube::Error),
    /// A pod did not start in time.
    #[error("segment {index}/{count} did not start within {waited:?}: {reason}")]
    Stuck {
        /// The segment.
        index: u32,
        /// The number of segments.
        count: u32,
        /// How long it was waited for.
        waited: Duration,
        /// Why, as Kubernetes says (`Unschedulable: 0/3 nodes are available: ...`).
        reason: String,
    },
    /// Interrupted twice: nothing merged.
    #[error("interrupted: the test's objects were deleted and nothing was merged")]
    Interrupted,
    /// No segment's result could be collected.
    #[error("no segment's result could be collected: {}", list(.0))]
    NothingCollected(Vec<MissingSegment>),
    /// A local directory could not be made.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The missing segments in one line.
fn list(m: &[MissingSegment]) -> String {
    m.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs the test: creates the Job and ConfigMap, shows the generators' merged
/// seconds to `live` (which may stop them all), collects their results into
/// `opts.local_dir` and returns them for the caller to merge. While it runs,
/// `opts.steering` reaches the test's pods (a change of the load from a
/// dashboard: each pod's `POST /control`). The objects are deleted on every way
/// out (success, failure, error, Ctrl-C). `interrupts` counts Ctrl-C presses.
pub async fn run(
    clients: Clients,
    spec: &GeneratorSpec,
    opts: &FlowOptions,
    interrupts: watch::Receiver<u32>,
    say: Say,
    live: &mut dyn LiveSink,
) -> Result<Collected, FlowError> {
    spec.check()?;
    std::fs::create_dir_all(&opts.local_dir)?;
    let objects = Objects::new(clients, spec);
    let outcome = match objects.create(spec, &say).await {
        Ok(()) => run_live(&objects, spec, opts, interrupts, &say, live).await,
        Err(e) => Err(e),
    };
    opts.steering.detach();
    objects.cleanup(&say).await;
    let collected = outcome?;
    for m in &collected.missing {
        say(&m.to_string());
    }
    if collected.dirs.is_empty() {
        return Err(FlowError::NothingCollected(collected.missing));
    }
    Ok(collected)
}

/// The collect loop and the live loop side by side. The live loop ends when every
/// feed has (or was left out), by its deadline, or soon after the collect loop.
async fn run_live(
    o: &Objects,
    spec: &GeneratorSpec,
    opts: &FlowOptions,
    interrupts: watch::Receiver<u32>,
    say: &Say,
    sink: &mut dyn LiveSink,
) -> Result<Collected, FlowError> {
    let n = spec.generators;
    let shared = Shared::new(n);
    o.steer(&opts.steering, spec.port, shared.clone());
    let mut links: Vec<PodLink> = (0..n as usize)
        .map(|i| o.link(spec.port, i, shared.clone()))
        .collect();
    let lopts = live_options(
        SystemTime::from(spec.start_at),
        spec.planned + spec.graceful_stop,
        opts.poll,
        opts.live_stall_after,
        opts.finish_timeout,
    );
    let presses = interrupts.clone();
    let (result, live_out) = {
        let live = async {
            let out = watch_live(
                &mut links,
                &lopts,
                &mut *sink,
                || (*presses.borrow() >= 1).then(|| "interrupted (Ctrl-C)".to_string()),
                |note| shared.saw(note),
            )
            .await;
            shared.all_finished();
            out
        };
        let collecting = collect::collect(o, spec, opts, interrupts, say, &shared, lopts.start);
        tokio::pin!(live);
        tokio::pin!(collecting);
        let mut live_out = None;
        let result = loop {
            tokio::select! {
                r = &mut collecting => break r,
                out = &mut live, if live_out.is_none() => live_out = Some(out),
            }
        };
        if live_out.is_none() && result.is_ok() {
            // Every link now answers "ended": the loop ends within a round.
            shared.close_all();
            live_out =
                tokio::time::timeout(opts.poll * 2 + crate::live::REQUEST_TIMEOUT, &mut live)
                    .await
                    .ok();
        }
        (result, live_out)
    };
    sink.finish();
    let mut collected = result?;
    if let Some(out) = live_out {
        collected.live_seconds = out.seconds;
        collected.live_timed_out = out.timed_out;
        if let Some(why) = out.stopped {
            collected.stopped.get_or_insert(why);
        }
    }
    Ok(collected)
}

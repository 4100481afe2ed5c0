//! The coordinator: create the test's objects, watch its pods, show the whole test
//! live, collect every segment's result directory, hand them to a merge, and always
//! clean up. Every wait is bounded: a pod stuck Pending is named with its reason, a
//! segment that never reports is named missing, and a Ctrl-C stops the generators.
//!
//! Two loops run side by side: the collect loop (pods, status, results) and the live
//! loop (`pado_fleet::coordinate::watch` over each pod's `/live` feed through the pod
//! proxy, [`crate::live`]), which hands each merged second of the whole test to the
//! caller's [`LiveSink`]. When the sink says stop (an `abort_on_fail` threshold
//! failed on the merged seconds), every pod gets `POST /stop`, stops its run
//! gracefully and reports; the flow collects them at once and merges with
//! [`Collected::stopped`] set (the CLI merges such a run as partial). A generator's
//! log is not followed: the last lines of a pod that failed are said instead.
//!
//! Ctrl-C: the first stops the generators the same way (`POST /stop`); a segment the
//! stop cannot reach (its pod not running yet, out of the live view, or the stop
//! refused) is stopped by deleting the Job, so its generator gets SIGTERM, stops its
//! run gracefully and keeps serving what it wrote during its termination grace. The
//! flow collects what it can for [`FlowOptions::interrupt_grace`], names the rest,
//! and merges with [`Collected::interrupted`] set. The second stops collecting at
//! once: clean up, no merge ([`FlowError::Interrupted`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::AsyncReadExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use kube::Client;
use tokio::sync::watch;

use crate::cluster::Clients;
use crate::live::{PodLink, Shared};
use crate::manifests::{self, INDEX_ANNOTATION};
use crate::spec::{GeneratorSpec, SpecError};
use pado_fleet::access::TOKEN_HEADER;
use pado_fleet::archive;
use pado_fleet::coordinate::{self, Control, LiveOptions, Notice};

pub use crate::live::{LiveSink, NoLiveView};

/// Where a line of progress goes (the CLI prints it).
pub type Say = Arc<dyn Fn(&str) + Send + Sync>;

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
        }
    }
}

/// A segment whose result is not there, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingSegment {
    /// Its index (0-based, as `--segment i/N`).
    pub index: u32,
    /// The number of segments.
    pub count: u32,
    /// What happened to it.
    pub reason: String,
}

impl std::fmt::Display for MissingSegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "segment {}/{} missing: {}",
            self.index, self.count, self.reason
        )
    }
}

/// What the flow collected, as the merge gets it.
#[derive(Clone, Debug, Default)]
pub struct Collected {
    /// The local result directories, in segment order.
    pub dirs: Vec<PathBuf>,
    /// Each collected segment's own exit code, by index.
    pub exit_codes: BTreeMap<u32, i32>,
    /// Segments without a result.
    pub missing: Vec<MissingSegment>,
    /// The run was stopped by Ctrl-C (merge what there is as partial).
    pub interrupted: bool,
    /// Why every generator was stopped before its planned end (Ctrl-C, or an
    /// `abort_on_fail` threshold on the merged seconds): merge as partial.
    pub stopped: Option<String>,
    /// The live view saw this many seconds of the whole test.
    pub live_seconds: u32,
}

/// Why a flow ended without a merge.
#[derive(Debug, thiserror::Error)]
pub enum FlowError<E: std::fmt::Display> {
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
    /// The merge failed.
    #[error("{0}")]
    Merge(E),
}

fn list(m: &[MissingSegment]) -> String {
    m.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs the test: creates the Job and ConfigMap, shows the generators' merged
/// seconds to `live` (which may stop them all), collects their results into
/// `opts.local_dir`, calls `merge` with them and returns its exit code. The objects
/// are deleted on every way out (success, failure, error, Ctrl-C). `interrupts`
/// counts Ctrl-C presses.
pub async fn run<M, E>(
    clients: Clients,
    spec: &GeneratorSpec,
    opts: &FlowOptions,
    interrupts: watch::Receiver<u32>,
    say: Say,
    live: &mut dyn LiveSink,
    merge: M,
) -> Result<i32, FlowError<E>>
where
    M: FnOnce(&Collected) -> Result<i32, E>,
    E: std::fmt::Display,
{
    spec.check()?;
    std::fs::create_dir_all(&opts.local_dir)?;
    let objects = Objects::new(clients, spec);
    let outcome = match objects.create(spec, &say).await {
        Ok(()) => run_live(&objects, spec, opts, interrupts, &say, live).await,
        Err(e) => Err(e),
    };
    objects.cleanup(&say).await;
    let collected = outcome?;
    for m in &collected.missing {
        say(&m.to_string());
    }
    if collected.dirs.is_empty() {
        return Err(FlowError::NothingCollected(collected.missing));
    }
    merge(&collected).map_err(FlowError::Merge)
}

/// The test's API handles.
struct Objects {
    /// For the pod proxy (no retries).
    proxy: Client,
    namespace: String,
    name: String,
    /// The run's token, sent to the pods as `X-Pado-Token`.
    token: pado_fleet::access::Token,
    jobs: Api<Job>,
    config_maps: Api<ConfigMap>,
    secrets: Api<Secret>,
    pods: Api<Pod>,
}

impl Objects {
    fn new(clients: Clients, spec: &GeneratorSpec) -> Objects {
        let client = clients.api;
        Objects {
            jobs: Api::namespaced(client.clone(), &spec.namespace),
            config_maps: Api::namespaced(client.clone(), &spec.namespace),
            secrets: Api::namespaced(client.clone(), &spec.namespace),
            pods: Api::namespaced(client, &spec.namespace),
            token: spec.token.clone(),
            proxy: clients.proxy,
            namespace: spec.namespace.clone(),
            name: spec.test_id.clone(),
        }
    }

    /// The Job first, then the Secret and the ConfigMap owned by it: should the
    /// coordinator vanish, the Job's TTL deletes them with it. Pods wait for the
    /// token's Secret and the volume's ConfigMap, so the order costs nothing.
    async fn create<E: std::fmt::Display>(
        &self,
        spec: &GeneratorSpec,
        say: &Say,
    ) -> Result<(), FlowError<E>> {
        let pp = PostParams {
            field_manager: Some("pado".into()),
            ..Default::default()
        };
        let job = manifests::job(spec, time::OffsetDateTime::now_utc());
        let created = self
            .jobs
            .create(&pp, &job)
            .await
            .map_err(|source| FlowError::Create {
                what: format!("Job {}/{}", self.namespace, self.name),
                source,
            })?;
        let owner = created.metadata.uid.map(|uid| {
            vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: self.name.clone(),
                uid,
                controller: None,
                block_owner_deletion: None,
            }]
        });
        let mut secret = manifests::secret(spec);
        secret.metadata.owner_references = owner.clone();
        self.secrets
            .create(&pp, &secret)
            .await
            .map_err(|source| FlowError::Create {
                what: format!("Secret {}/{}", self.namespace, self.name),
                source,
            })?;
        let mut cm = manifests::config_map(spec);
        cm.metadata.owner_references = owner;
        self.config_maps
            .create(&pp, &cm)
            .await
            .map_err(|source| FlowError::Create {
                what: format!("ConfigMap {}/{}", self.namespace, self.name),
                source,
            })?;
        say(&format!(
            "created Job, Secret and ConfigMap {}/{}: {} generators starting at {}",
            self.namespace,
            self.name,
            spec.generators,
            manifests::rfc3339(spec.start_at)
        ));
        Ok(())
    }

    /// Deletes the Job (its pods with it, in the background) so generators stop.
    async fn delete_job(&self) -> Result<(), kube::Error> {
        match self
            .jobs
            .delete(&self.name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Deletes the three objects; what is already gone is fine, what cannot be
    /// deleted is said with the command that would.
    async fn cleanup(&self, say: &Say) {
        if let Err(e) = self.delete_job().await {
            say(&format!(
                "warning: could not delete Job {0}/{1} ({e}); delete it with `kubectl -n {0} delete job {1}`",
                self.namespace, self.name
            ));
        }
        match self
            .config_maps
            .delete(&self.name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => say(&format!(
                "warning: could not delete ConfigMap {0}/{1} ({e}); delete it with `kubectl -n {0} delete configmap {1}`",
                self.namespace, self.name
            )),
        }
        match self
            .secrets
            .delete(&self.name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => say(&format!(
                "warning: could not delete Secret {0}/{1} ({e}); delete it with `kubectl -n {0} delete secret {1}`",
                self.namespace, self.name
            )),
        }
        say(&format!(
            "deleted Job, Secret and ConfigMap {}/{}",
            self.namespace, self.name
        ));
    }

    fn proxy_path(&self, pod: &str, port: u16, what: &str) -> String {
        format!(
            "/api/v1/namespaces/{}/pods/{pod}:{port}/proxy/{what}",
            self.namespace
        )
    }

    /// The generator's `/status` through the pod proxy: `Some(exit code)` once its run
    /// is over, `None` while running or not answering yet.
    async fn status(&self, pod: &str, port: u16) -> Option<i32> {
        let req = http::Request::get(self.proxy_path(pod, port, "status"))
            .header(TOKEN_HEADER, self.token.expose())
            .body(Vec::new())
            .ok()?;
        let text = tokio::time::timeout(crate::live::REQUEST_TIMEOUT, self.proxy.request_text(req))
            .await
            .ok()?
            .ok()?;
        match pado_fleet::status::Status::parse(text.as_bytes()).ok()? {
            pado_fleet::status::Status::Done { exit_code, .. } => Some(exit_code),
            _ => None,
        }
    }

    /// Fetches the segment's tar into `dest`, then tells the generator it may exit.
    async fn fetch(
        &self,
        pod: &str,
        port: u16,
        dest: &std::path::Path,
        max: u64,
    ) -> Result<archive::Unpacked, String> {
        let req = http::Request::get(self.proxy_path(pod, port, "result.tar"))
            .header(TOKEN_HEADER, self.token.expose())
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        let stream = self
            .proxy
            .request_stream(req)
            .await
            .map_err(|e| format!("fetching its result failed: {e}"))?;
        let mut bytes = Vec::new();
        stream
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| format!("fetching its result failed: {e}"))?;
        if bytes.len() as u64 > max {
            return Err(format!("its result is larger than {max} bytes"));
        }
        let got = archive::unpack(&bytes[..], dest, max)
            .map_err(|e| format!("its result could not be unpacked: {e}"))?;
        if let Ok(req) = http::Request::post(self.proxy_path(pod, port, "done"))
            .header(TOKEN_HEADER, self.token.expose())
            .body(Vec::new())
        {
            // The generator exits after its timeout anyway.
            let _ =
                tokio::time::timeout(crate::live::REQUEST_TIMEOUT, self.proxy.request_text(req))
                    .await;
        }
        Ok(got)
    }

    /// Says the last lines of a pod's log, prefixed with its segment: what a
    /// failed generator said before it failed.
    async fn say_log_tail(&self, pod: &str, prefix: &str, lines: i64, say: &Say) {
        if lines <= 0 {
            return;
        }
        let lp = LogParams {
            container: Some("pado".into()),
            tail_lines: Some(lines),
            ..Default::default()
        };
        match tokio::time::timeout(Duration::from_secs(10), self.pods.logs(pod, &lp)).await {
            Ok(Ok(text)) if !text.trim().is_empty() => {
                say(&format!("{prefix} the last lines of pod {pod}'s log:"));
                for line in text.lines() {
                    // The pod's output is its text: no escape sequence reaches the terminal.
                    say(&format!(
                        "{prefix} {}",
                        pado_metrics::fmt::terminal_safe(line)
                    ));
                }
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => say(&format!("{prefix} its log could not be read: {e}")),
            Err(_) => say(&format!("{prefix} its log could not be read in 10 s")),
        }
    }
}

/// One segment as the coordinator follows it.
#[derive(Default)]
struct Segment {
    pod: Option<String>,
    /// Its start was said.
    announced: bool,
    done: bool,
}

/// The collect loop and the live loop side by side. The live loop ends when every
/// feed has (or was left out), by its deadline, or soon after the collect loop.
async fn run_live<E: std::fmt::Display>(
    o: &Objects,
    spec: &GeneratorSpec,
    opts: &FlowOptions,
    interrupts: watch::Receiver<u32>,
    say: &Say,
    sink: &mut dyn LiveSink,
) -> Result<Collected, FlowError<E>> {
    let n = spec.generators;
    let until_start: Duration = (spec.start_at - time::OffsetDateTime::now_utc())
        .try_into()
        .unwrap_or(Duration::ZERO);
    let start = Instant::now() + until_start;
    let shared = Shared::new(n);
    let mut links: Vec<PodLink> = (0..n as usize)
        .map(|i| {
            PodLink::new(
                o.proxy.clone(),
                &o.namespace,
                spec.port,
                i,
                shared.clone(),
                o.token.clone(),
            )
        })
        .collect();
    let lopts = LiveOptions {
        poll_every: opts.poll,
        start,
        stall_after: opts.live_stall_after,
        deadline: start + spec.planned + spec.graceful_stop + opts.finish_timeout,
    };
    let sink = std::cell::RefCell::new(sink);
    let presses = interrupts.clone();
    let live = async {
        let out = coordinate::watch(
            &mut links,
            &lopts,
            |s, totals| {
                let c = sink.borrow_mut().second(s, totals);
                if let Control::StopAll(why) = &c {
                    shared.lock().stopping.get_or_insert_with(|| why.clone());
                }
                c
            },
            || (*presses.borrow() >= 1).then(|| "interrupted (Ctrl-C)".to_string()),
            |note| {
                {
                    let mut st = shared.lock();
                    match &note {
                        Notice::LeftOut(g, _) => {
                            if let Some(seg) = st.segs.get_mut(*g) {
                                seg.finished = true;
                                seg.left_out = true;
                            }
                        }
                        Notice::Stopping(why) => {
                            st.stopping.get_or_insert_with(|| why.clone());
                        }
                        Notice::StopFailed(..) => {}
                    }
                }
                sink.borrow_mut().notice(&note);
            },
        )
        .await;
        shared.all_finished();
        out
    };
    let collecting = collect(o, spec, opts, interrupts, say, &shared, start);
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
        live_out = tokio::time::timeout(opts.poll * 2 + crate::live::REQUEST_TIMEOUT, &mut live)
            .await
            .ok();
    }
    sink.borrow_mut().finish();
    let mut collected = result?;
    if let Some(out) = live_out {
        collected.live_seconds = out.seconds;
        if let Some(why) = out.stopped {
            collected.stopped.get_or_insert(why);
        }
    }
    Ok(collected)
}

#[allow(clippy::too_many_arguments)]
async fn collect<E: std::fmt::Display>(
    o: &Objects,
    spec: &GeneratorSpec,
    opts: &FlowOptions,
    mut interrupts: watch::Receiver<u32>,
    say: &Say,
    shared: &Shared,
    start: Instant,
) -> Result<Collected, FlowError<E>> {
    let n = spec.generators;
    let started = Instant::now();
    // The run's planned end on this clock; status is asked for from then on.
    let planned_end = start + spec.planned;
    let deadline = planned_end + spec.graceful_stop + opts.finish_timeout + opts.pending_timeout;
    let mut segs: Vec<Segment> = (0..n).map(|_| Segment::default()).collect();
    // When each segment's run was first seen over, for the wait on its feed.
    let mut over_at: Vec<Option<Instant>> = vec![None; n as usize];
    let mut out = Collected::default();
    let mut interrupted_at: Option<Instant> = None;
    let mut job_deleted = false;
    let mut list_errors = 0;
    let lp = ListParams::default().labels(&manifests::pod_selector(spec));
    let result = loop {
        let presses = *interrupts.borrow_and_update();
        if presses >= 2 {
            break Err(FlowError::Interrupted);
        }
        if presses == 1 && interrupted_at.is_none() {
            say("interrupted: stopping the generators (Ctrl-C again to stop collecting)");
            interrupted_at = Some(Instant::now());
            out.interrupted = true;
        }
        let stopping = shared.lock().stopping.clone();
        if let Some(why) = &stopping {
            out.stopped.get_or_insert_with(|| why.clone());
        }
        // A stop (Ctrl-C, or a threshold) reaches the generators in the live view
        // by `POST /stop`; once the live loop has sent it, one it could not reach
        // (no pod running yet, out of the live view, the stop refused) is stopped
        // by deleting the Job.
        if (interrupted_at.is_some() || stopping.is_some()) && !job_deleted {
            let unreachable = {
                let st = shared.lock();
                let pending = segs.iter().zip(&st.segs).any(|(seg, l)| {
                    !seg.done
                        && l.reached
                        && !l.left_out
                        && !l.finished
                        && !l.stop_taken
                        && !l.stop_failed
                });
                let sent = (st.stopping.is_some() || st.live_over) && !pending;
                sent && segs
                    .iter()
                    .zip(&st.segs)
                    .any(|(seg, l)| !seg.done && (l.stop_failed || l.left_out || !l.reached))
            };
            if unreachable {
                job_deleted = true;
                if let Err(e) = o.delete_job().await {
                    say(&format!("warning: could not delete the Job: {e}"));
                }
            }
        }
        if segs.iter().all(|s| s.done) {
            break Ok(());
        }
        let now = Instant::now();
        let give_up = if interrupted_at.is_some_and(|t| now > t + opts.interrupt_grace) {
            Some("interrupted before its result was collected".to_string())
        } else if now > deadline {
            Some(format!(
                "no result {:?} after the planned end",
                spec.graceful_stop + opts.finish_timeout + opts.pending_timeout
            ))
        } else {
            None
        };
        if let Some(reason) = give_up {
            for (i, s) in segs.iter_mut().enumerate().filter(|(_, s)| !s.done) {
                s.done = true;
                out.missing.push(missing(i, n, &reason));
            }
            break Ok(());
        }
        let stop_in_effect = interrupted_at.is_some() || stopping.is_some();
        let pods = match o.pods.list(&lp).await {
            Ok(p) => {
                list_errors = 0;
                p.items
            }
            Err(e) => {
                list_errors += 1;
                if list_errors >= 5 {
                    break Err(FlowError::Watch(e));
                }
                Vec::new()
            }
        };
        let mut seen = vec![false; n as usize];
        let mut stuck = None;
        for pod in &pods {
            let Some(i) = pod_index(pod).filter(|i| *i < n) else {
                continue;
            };
            let iu = i as usize;
            seen[iu] = true;
            let seg = &mut segs[iu];
            if seg.done {
                continue;
            }
            let name = pod.metadata.name.clone().unwrap_or_default();
            seg.pod = Some(name.clone());
            shared.lock().segs[iu].pod = Some(name.clone());
            let phase = pod
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default();
            if phase == "Pending" || phase.is_empty() {
                if started.elapsed() > opts.pending_timeout && interrupted_at.is_none() {
                    stuck = Some((i, pending_reason(pod)));
                }
                continue;
            }
            if !seg.announced {
                seg.announced = true;
                let node = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .unwrap_or("a node");
                say(&format!(
                    "[{i}/{n}] pod {name} {} on {node}",
                    phase.to_lowercase()
                ));
            }
            let prefix = format!("[{i}/{n}]");
            let ask =
                phase == "Running" && (Instant::now() + opts.poll >= planned_end || stop_in_effect);
            if ask {
                if let Some(code) = o.status(&name, spec.port).await {
                    // The live view has its last second first (or goes on without
                    // it, should its feed not end within the stall time).
                    let over = *over_at[iu].get_or_insert_with(Instant::now);
                    let live_done = shared.lock().segs[iu].finished
                        || Instant::now() >= over + opts.live_stall_after;
                    if !live_done {
                        continue;
                    }
                    let dest = opts.local_dir.join(format!("segment-{i}"));
                    seg.done = true;
                    shared.lock().segs[iu].closed = true;
                    match o
                        .fetch(&name, spec.port, &dest, opts.max_result_bytes)
                        .await
                    {
                        Ok(got) => {
                            say(&format!(
                                "{prefix} result collected ({} files, {} bytes), exit code {code}",
                                got.files, got.bytes
                            ));
                            out.dirs.push(dest);
                            out.exit_codes.insert(i, code);
                        }
                        Err(reason) => out.missing.push(missing(
                            iu,
                            n,
                            &format!("{reason} (its run exited with {code})"),
                        )),
                    }
                    if code != 0 {
                        o.say_log_tail(&name, &prefix, opts.failed_log_lines, say)
                            .await;
                    }
                }
            } else if phase == "Succeeded" || phase == "Failed" {
                seg.done = true;
                shared.lock().segs[iu].closed = true;
                out.missing.push(missing(
                    iu,
                    n,
                    &format!(
                        "its pod {name} ended before its result was collected ({})",
                        ended_reason(pod)
                    ),
                ));
                o.say_log_tail(&name, &prefix, opts.failed_log_lines, say)
                    .await;
            }
        }
        if stuck.is_none() && started.elapsed() > opts.pending_timeout && interrupted_at.is_none() {
            if let Some(i) = (0..n as usize).find(|&i| !seen[i] && !segs[i].done) {
                stuck = Some((
                    i as u32,
                    "no pod was created for it (see `kubectl describe job`: quota, admission, or the Job was deleted)".into(),
                ));
            }
        }
        if let Some((index, reason)) = stuck {
            break Err(FlowError::Stuck {
                index,
                count: n,
                waited: opts.pending_timeout,
                reason,
            });
        }
        tokio::select! {
            _ = tokio::time::sleep(opts.poll) => {}
            changed = interrupts.changed() => {
                if changed.is_err() {
                    tokio::time::sleep(opts.poll).await;
                }
            }
        }
    };
    out.dirs.sort();
    out.missing.sort_by_key(|m| m.index);
    result.map(|()| out)
}

fn missing(i: usize, n: u32, reason: &str) -> MissingSegment {
    MissingSegment {
        index: i as u32,
        count: n,
        reason: reason.to_string(),
    }
}

/// The pod's completion index, from the annotation the Job controller sets.
fn pod_index(pod: &Pod) -> Option<u32> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(INDEX_ANNOTATION)?
        .parse()
        .ok()
}

/// Why a pod is Pending, as Kubernetes says: an unscheduled pod's condition
/// (`Unschedulable: 0/3 nodes are available: 3 Insufficient cpu`), else a waiting
/// container's reason (`ImagePullBackOff: ...`).
pub fn pending_reason(pod: &Pod) -> String {
    let Some(st) = &pod.status else {
        return "Pending (no status yet)".into();
    };
    for c in st.conditions.iter().flatten() {
        if c.type_ == "PodScheduled" && c.status == "False" {
            return join_reason(c.reason.as_deref(), c.message.as_deref(), "not scheduled");
        }
    }
    for cs in st.container_statuses.iter().flatten() {
        if let Some(w) = cs.state.as_ref().and_then(|s| s.waiting.as_ref()) {
            return join_reason(w.reason.as_deref(), w.message.as_deref(), "waiting");
        }
    }
    join_reason(st.reason.as_deref(), st.message.as_deref(), "Pending")
}

/// How a pod ended: evicted by the kubelet (its results emptyDir past its
/// `sizeLimit`, the node short of disk or memory) with the kubelet's message, else
/// its container's exit code and reason, or the pod's reason (`DeadlineExceeded`).
fn ended_reason(pod: &Pod) -> String {
    let st = pod.status.as_ref();
    if st.and_then(|s| s.reason.as_deref()) == Some("Evicted") {
        return join_reason(
            Some("Evicted"),
            st.and_then(|s| s.message.as_deref()),
            "Evicted",
        );
    }
    for cs in st
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
    {
        if let Some(t) = cs.state.as_ref().and_then(|s| s.terminated.as_ref()) {
            return format!(
                "exit code {}{}",
                t.exit_code,
                t.reason
                    .as_deref()
                    .map(|r| format!(", {r}"))
                    .unwrap_or_default()
            );
        }
    }
    join_reason(
        st.and_then(|s| s.reason.as_deref()),
        st.and_then(|s| s.message.as_deref()),
        st.and_then(|s| s.phase.as_deref()).unwrap_or("ended"),
    )
}

fn join_reason(reason: Option<&str>, message: Option<&str>, fallback: &str) -> String {
    match (reason, message) {
        (Some(r), Some(m)) if !m.is_empty() => format!("{r}: {m}"),
        (Some(r), _) => r.to_string(),
        (None, Some(m)) => m.to_string(),
        (None, None) => fallback.to_string(),
    }
}

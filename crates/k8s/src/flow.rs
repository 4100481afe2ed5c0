//! The coordinator: create the test's objects, watch its pods, stream their output,
//! collect every segment's result directory, hand them to a merge, and always clean
//! up. Every wait is bounded: a pod stuck Pending is named with its reason, a segment
//! that never reports is named missing, and a Ctrl-C stops the generators.
//!
//! Ctrl-C: the first deletes the Job, so every generator gets SIGTERM, stops its run
//! gracefully (as `pado run` does on Ctrl-C) and keeps serving what it wrote during
//! its termination grace; the flow collects what it can for
//! [`FlowOptions::interrupt_grace`], names the rest, and merges with
//! [`Collected::interrupted`] set (the CLI merges such a run as partial). The second
//! stops collecting at once: clean up, no merge ([`FlowError::Interrupted`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{AsyncBufReadExt, AsyncReadExt, StreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use kube::Client;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::manifests::{self, INDEX_ANNOTATION};
use crate::spec::{GeneratorSpec, SpecError};
use pado_fleet::archive;

/// Where a line of progress goes (the CLI prints it).
pub type Say = Arc<dyn Fn(&str) + Send + Sync>;

/// How the coordinator waits and where it puts the results.
#[derive(Clone, Debug)]
pub struct FlowOptions {
    /// Local directory for the collected results, one `segment-<i>` each.
    pub local_dir: PathBuf,
    /// Time between looks at the pods.
    pub poll: Duration,
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
    /// Print each generator's output lines, prefixed `[i/N]`.
    pub follow_logs: bool,
}

impl FlowOptions {
    /// Defaults for a run writing its segments under `local_dir`.
    pub fn new(local_dir: PathBuf) -> FlowOptions {
        FlowOptions {
            local_dir,
            poll: Duration::from_secs(1),
            pending_timeout: Duration::from_secs(300),
            finish_timeout: Duration::from_secs(120),
            interrupt_grace: Duration::from_secs(60),
            max_result_bytes: archive::DEFAULT_MAX_BYTES,
            follow_logs: true,
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

/// Runs the test: creates the Job and ConfigMap, follows the generators, collects
/// their results into `opts.local_dir`, calls `merge` with them and returns its
/// exit code. The objects are deleted on every way out (success, failure, error,
/// Ctrl-C). `interrupts` counts Ctrl-C presses.
pub async fn run<M, E>(
    client: Client,
    spec: &GeneratorSpec,
    opts: &FlowOptions,
    interrupts: watch::Receiver<u32>,
    say: Say,
    merge: M,
) -> Result<i32, FlowError<E>>
where
    M: FnOnce(&Collected) -> Result<i32, E>,
    E: std::fmt::Display,
{
    spec.check()?;
    std::fs::create_dir_all(&opts.local_dir)?;
    let objects = Objects::new(client, spec);
    let outcome = match objects.create(spec, &say).await {
        Ok(()) => collect(&objects, spec, opts, interrupts, &say).await,
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
    client: Client,
    namespace: String,
    name: String,
    jobs: Api<Job>,
    config_maps: Api<ConfigMap>,
    pods: Api<Pod>,
}

impl Objects {
    fn new(client: Client, spec: &GeneratorSpec) -> Objects {
        Objects {
            jobs: Api::namespaced(client.clone(), &spec.namespace),
            config_maps: Api::namespaced(client.clone(), &spec.namespace),
            pods: Api::namespaced(client.clone(), &spec.namespace),
            client,
            namespace: spec.namespace.clone(),
            name: spec.test_id.clone(),
        }
    }

    /// The Job first, then the ConfigMap owned by it: should the coordinator vanish,
    /// the Job's TTL deletes the ConfigMap with it. Pods wait for the volume's
    /// ConfigMap, so the order costs nothing.
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
        let mut cm = manifests::config_map(spec);
        if let Some(uid) = created.metadata.uid {
            cm.metadata.owner_references = Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "Job".into(),
                name: self.name.clone(),
                uid,
                controller: None,
                block_owner_deletion: None,
            }]);
        }
        self.config_maps
            .create(&pp, &cm)
            .await
            .map_err(|source| FlowError::Create {
                what: format!("ConfigMap {}/{}", self.namespace, self.name),
                source,
            })?;
        say(&format!(
            "created Job and ConfigMap {}/{}: {} generators starting at {}",
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

    /// Deletes both objects; what is already gone is fine, what cannot be deleted is
    /// said with the command that would.
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
        say(&format!(
            "deleted Job and ConfigMap {}/{}",
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
            .body(Vec::new())
            .ok()?;
        let text = self.client.request_text(req).await.ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        if v["state"] == "done" {
            v["exit_code"].as_i64().map(|c| c as i32)
        } else {
            None
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
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        let stream = self
            .client
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
        if let Ok(req) = http::Request::post(self.proxy_path(pod, port, "done")).body(Vec::new()) {
            // The generator exits after its timeout anyway.
            let _ = self.client.request_text(req).await;
        }
        Ok(got)
    }

    /// Follows a pod's log, printing each line prefixed with its segment.
    fn follow_log(&self, pod: String, prefix: String, say: Say) -> JoinHandle<()> {
        let pods = self.pods.clone();
        tokio::spawn(async move {
            let lp = LogParams {
                follow: true,
                container: Some("pado".into()),
                ..Default::default()
            };
            let Ok(stream) = pods.log_stream(&pod, &lp).await else {
                return;
            };
            let mut lines = stream.lines();
            while let Some(Ok(line)) = lines.next().await {
                say(&format!("{prefix} {line}"));
            }
        })
    }
}

/// One segment as the coordinator follows it.
#[derive(Default)]
struct Segment {
    pod: Option<String>,
    log: Option<JoinHandle<()>>,
    /// Its start was said.
    announced: bool,
    done: bool,
}

async fn collect<E: std::fmt::Display>(
    o: &Objects,
    spec: &GeneratorSpec,
    opts: &FlowOptions,
    mut interrupts: watch::Receiver<u32>,
    say: &Say,
) -> Result<Collected, FlowError<E>> {
    let n = spec.generators;
    let started = Instant::now();
    let until_start = (spec.start_at - time::OffsetDateTime::now_utc())
        .try_into()
        .unwrap_or(Duration::ZERO);
    // The run's planned end on this clock; status is asked for from then on.
    let planned_end = started + until_start + spec.planned;
    let deadline = planned_end + spec.graceful_stop + opts.finish_timeout + opts.pending_timeout;
    let mut segs: Vec<Segment> = (0..n).map(|_| Segment::default()).collect();
    let mut out = Collected::default();
    let mut interrupted_at: Option<Instant> = None;
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
            if let Err(e) = o.delete_job().await {
                say(&format!("warning: could not delete the Job: {e}"));
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
            if opts.follow_logs && seg.log.is_none() {
                seg.log = Some(o.follow_log(name.clone(), format!("[{i}/{n}]"), say.clone()));
            }
            let ask = phase == "Running"
                && (Instant::now() + opts.poll >= planned_end || interrupted_at.is_some());
            if ask {
                if let Some(code) = o.status(&name, spec.port).await {
                    let dest = opts.local_dir.join(format!("segment-{i}"));
                    seg.done = true;
                    match o
                        .fetch(&name, spec.port, &dest, opts.max_result_bytes)
                        .await
                    {
                        Ok(got) => {
                            say(&format!(
                                "[{i}/{n}] result collected ({} files, {} bytes), exit code {code}",
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
                }
            } else if phase == "Succeeded" || phase == "Failed" {
                seg.done = true;
                out.missing.push(missing(
                    iu,
                    n,
                    &format!(
                        "its pod {name} ended before its result was collected ({})",
                        ended_reason(pod)
                    ),
                ));
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
    // Let the logs' last lines through, then stop following.
    for s in &mut segs {
        if let Some(h) = s.log.take() {
            let abort = h.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), h)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
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

/// How a pod ended: its container's exit code and reason, or the pod's reason
/// (`DeadlineExceeded`, `Evicted`).
fn ended_reason(pod: &Pod) -> String {
    let st = pod.status.as_ref();
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

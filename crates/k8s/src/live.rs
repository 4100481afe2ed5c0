//! The live view of a test on Kubernetes: each generator pod's feed (`/live`) and
//! stop (`/stop`) reached through the API server's pod proxy, as
//! [`pado_fleet::coordinate::GeneratorLink`]s, so the coordinator's live loop can
//! merge their seconds into one progress line of the whole test and stop them all
//! (an `abort_on_fail` threshold failing on the merged seconds, or Ctrl-C).
//!
//! The flow's collect loop and the live loop run side by side and share a little
//! state per segment ([`Shared`]): which pod it is (pods appear when the Job
//! controller makes them), whether its feed is over (so its result is fetched only
//! after the live view has its last second), whether the collect loop is done with
//! it (then its link answers "ended" and the live view goes on without it), and
//! whether a stop reached it.
//!
//! A change of the load reaches the pods the same way ([`PodSteering`]), from the
//! thread of whoever asks (a dashboard), on the flow's runtime.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kube::Client;
use pado_fleet::access::{Token, TOKEN_HEADER};
use pado_fleet::coordinate::{GeneratorLink, LivePoll, Notice};

/// How long one poll, stop or status through the pod proxy may take (the live loop
/// polls the generators in turn: one not answering holds the round this long).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Most bytes of a pod's answer read for one request (a live poll of 120 busy
/// seconds); past it the answer is refused.
const MAX_ANSWER: usize = 256 * 1024 * 1024;

/// Most bytes of a pod's answer to `GET /observed`: twice what a generator sends
/// ([`pado_fleet::feed::MAX_OBSERVED_BYTES_PER_POLL`]).
const MAX_OBSERVED_ANSWER: usize = 2 * pado_fleet::feed::MAX_OBSERVED_BYTES_PER_POLL;

/// One segment as both loops see it.
#[derive(Debug, Default, Clone)]
pub(crate) struct SegmentLive {
    /// Its pod, once the Job controller made it.
    pub pod: Option<String>,
    /// Its feed answered at least once.
    pub reached: bool,
    /// The live loop is done with it (feed over, left out, or the loop ended).
    pub finished: bool,
    /// The live loop went on without it (stalled or unreachable).
    pub left_out: bool,
    /// The collect loop is done with it: its link answers "ended".
    pub closed: bool,
    /// A `/stop` reached it.
    pub stop_taken: bool,
    /// A `/stop` did not reach it.
    pub stop_failed: bool,
}

/// The state shared by the collect loop and the live loop.
#[derive(Debug, Clone)]
pub(crate) struct Shared(Arc<Mutex<SharedState>>);

#[derive(Debug)]
pub(crate) struct SharedState {
    pub segs: Vec<SegmentLive>,
    /// Why every generator was asked to stop (Ctrl-C or a threshold), once.
    pub stopping: Option<String>,
    /// The live loop has ended.
    pub live_over: bool,
}

impl Shared {
    pub(crate) fn new(n: u32) -> Shared {
        Shared(Arc::new(Mutex::new(SharedState {
            segs: vec![SegmentLive::default(); n as usize],
            stopping: None,
            live_over: false,
        })))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, SharedState> {
        pado_base::lock(&self.0)
    }

    /// The live loop ended: nothing more comes from any feed.
    pub(crate) fn all_finished(&self) {
        let mut st = self.lock();
        st.live_over = true;
        for s in &mut st.segs {
            s.finished = true;
        }
    }

    /// What the live loop said: a generator it left out is finished for it; a stop
    /// it sent is the run's stop.
    pub(crate) fn saw(&self, note: &Notice) {
        let mut st = self.lock();
        match note {
            Notice::LeftOut(g, _) => {
                if let Some(seg) = st.segs.get_mut(*g) {
                    seg.finished = true;
                    seg.left_out = true;
                }
            }
            Notice::Stopping(why) => {
                st.stopping.get_or_insert_with(|| why.clone());
            }
            Notice::StopFailed(..) | Notice::Observed(_) => {}
        }
    }

    /// The collect loop is over: every link answers "ended".
    pub(crate) fn close_all(&self) {
        for s in &mut self.lock().segs {
            s.closed = true;
        }
    }
}

/// One generator pod reached through the API server's pod proxy.
pub(crate) struct PodLink {
    client: Client,
    namespace: String,
    port: u16,
    index: usize,
    shared: Shared,
    /// The run's token, sent as `X-Pado-Token` (the pod proxy keeps `Authorization`
    /// for the API server).
    token: Token,
}

impl PodLink {
    pub(crate) fn new(
        client: Client,
        namespace: &str,
        port: u16,
        index: usize,
        shared: Shared,
        token: Token,
    ) -> PodLink {
        PodLink {
            client,
            namespace: namespace.to_string(),
            port,
            index,
            shared,
            token,
        }
    }

    /// `Err` while its pod does not exist; `Ok(None)` once the collect loop is done
    /// with it.
    fn pod(&self) -> Result<Option<String>, String> {
        let st = self.shared.lock();
        let seg = &st.segs[self.index];
        if seg.closed {
            return Ok(None);
        }
        seg.pod
            .clone()
            .map(Some)
            .ok_or_else(|| "its pod does not exist yet".to_string())
    }

    /// One request through the pod proxy: status, `Pado-State` header, body (at
    /// most `max_body` bytes).
    async fn request(
        &self,
        method: http::Method,
        pod: &str,
        what: &str,
        max_body: usize,
    ) -> Result<(u16, Option<String>, Vec<u8>), String> {
        let to = ProxyTarget {
            client: self.client.clone(),
            namespace: self.namespace.clone(),
            port: self.port,
            token: self.token.clone(),
        };
        to.request(method, pod, what, None, max_body).await
    }
}

/// Where a pod's server is reached through the API server's proxy, and with which
/// token.
#[derive(Clone)]
struct ProxyTarget {
    client: Client,
    namespace: String,
    port: u16,
    token: Token,
}

impl ProxyTarget {
    /// One request through the pod proxy, with a JSON `body` if given: status,
    /// `Pado-State` header, body; within [`REQUEST_TIMEOUT`], and an answer of
    /// more than `max_body` bytes refused without reading it further.
    async fn request(
        &self,
        method: http::Method,
        pod: &str,
        what: &str,
        json: Option<Vec<u8>>,
        max_body: usize,
    ) -> Result<(u16, Option<String>, Vec<u8>), String> {
        let path = format!(
            "/api/v1/namespaces/{}/pods/{pod}:{}/proxy/{what}",
            self.namespace, self.port
        );
        let mut req = http::Request::builder()
            .method(method)
            .uri(path)
            .header(TOKEN_HEADER, self.token.expose());
        if json.is_some() {
            req = req.header(http::header::CONTENT_TYPE, "application/json");
        }
        let req = req
            .body(kube::client::Body::from(json.unwrap_or_default()))
            .map_err(|e| e.to_string())?;
        let go = async {
            let res = self.client.send(req).await.map_err(|e| e.to_string())?;
            let status = res.status().as_u16();
            let state = res
                .headers()
                .get("Pado-State")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = http_body_util::BodyExt::collect(http_body_util::Limited::new(
                res.into_body(),
                max_body,
            ))
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    format!("answer larger than {} MiB", max_body >> 20)
                } else {
                    e.to_string()
                }
            })?
            .to_bytes();
            Ok::<_, String>((status, state, body.to_vec()))
        };
        tokio::time::timeout(REQUEST_TIMEOUT, go)
            .await
            .map_err(|_| format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()))?
    }
}

/// What [`PodSteering`] reaches the pods with while the flow runs.
#[derive(Clone)]
struct Reach {
    target: ProxyTarget,
    shared: Shared,
    /// The flow's runtime: the API client's connections live there.
    runtime: tokio::runtime::Handle,
}

/// How a change of the load reaches each generator pod (`POST /control` through
/// the pod proxy) from outside the flow (a dashboard's thread), while the flow
/// runs: the caller makes it before the flow, [`crate::flow::run`] (given it in `FlowOptions::steering`) makes
/// it reach the test's pods, and it says so when they cannot be reached (no pod
/// yet, the flow over).
#[derive(Clone, Default)]
pub struct PodSteering(Arc<Mutex<Option<Reach>>>);

impl std::fmt::Debug for PodSteering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodSteering")
            .field("attached", &pado_base::lock(&self.0).is_some())
            .finish()
    }
}

impl PodSteering {
    /// Reach the pods of the flow's run: its client, token and shared state, on the
    /// runtime the flow runs on.
    pub(crate) fn attach(
        &self,
        client: Client,
        namespace: &str,
        port: u16,
        token: Token,
        shared: Shared,
    ) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            *pado_base::lock(&self.0) = Some(Reach {
                target: ProxyTarget {
                    client,
                    namespace: namespace.to_string(),
                    port,
                    token,
                },
                shared,
                runtime,
            });
        }
    }

    /// The flow is over: nothing more is sent.
    pub(crate) fn detach(&self) {
        *pado_base::lock(&self.0) = None;
    }

    /// Hands `body` (a `ControlCommand`'s JSON) to segment `index`'s pod and waits
    /// for its answer (at most [`REQUEST_TIMEOUT`] and a little): `Ok` when its run
    /// took it, else why not in its words. Blocking: never call it on the flow's
    /// own thread.
    pub fn send(&self, index: usize, body: &[u8]) -> Result<(), String> {
        let reach = pado_base::lock(&self.0).clone().ok_or_else(|| {
            "the test's pods are not running (not created yet, or the test has ended)".to_string()
        })?;
        let pod = {
            let st = reach.shared.lock();
            let seg = st
                .segs
                .get(index)
                .ok_or_else(|| format!("no segment {index}"))?;
            if seg.closed {
                return Err("its run has ended".into());
            }
            seg.pod
                .clone()
                .ok_or_else(|| "its pod does not exist yet".to_string())?
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let target = reach.target.clone();
        let body = body.to_vec();
        reach.runtime.spawn(async move {
            let got = target
                .request(http::Method::POST, &pod, "control", Some(body), MAX_ANSWER)
                .await;
            let _ = tx.send(got);
        });
        let (status, _, answer) = rx
            .recv_timeout(REQUEST_TIMEOUT + Duration::from_secs(1))
            .map_err(|_| format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()))??;
        if status == 200 {
            return Ok(());
        }
        let words = serde_json::from_slice::<serde_json::Value>(&answer)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string));
        match words {
            Some(w) => Err(format!("answered {status}: {w}")),
            None => Err(status_error(status, &answer)),
        }
    }
}

fn status_error(status: u16, body: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(body).chars().take(200).collect();
    format!("its pod proxy answered {status}: {}", text.trim())
}

impl GeneratorLink for PodLink {
    async fn live(&mut self, from: u32) -> Result<LivePoll, String> {
        let Some(pod) = self.pod()? else {
            return Ok(LivePoll {
                lines: Vec::new(),
                ended: true,
            });
        };
        let (status, state, lines) = self
            .request(
                http::Method::GET,
                &pod,
                &format!("live?from={from}"),
                MAX_ANSWER,
            )
            .await?;
        if status != 200 {
            return Err(status_error(status, &lines));
        }
        let ended = state.as_deref() == Some("done");
        let mut st = self.shared.lock();
        let seg = &mut st.segs[self.index];
        seg.reached = true;
        if ended && lines.is_empty() {
            seg.finished = true;
        }
        Ok(LivePoll { lines, ended })
    }

    async fn stop(&mut self) -> Result<(), String> {
        let got = match self.pod() {
            Ok(Some(pod)) => match self
                .request(http::Method::POST, &pod, "stop", MAX_ANSWER)
                .await
            {
                Ok((202, _, _)) => Ok(()),
                Ok((status, _, body)) => Err(status_error(status, &body)),
                Err(e) => Err(e),
            },
            Ok(None) => Ok(()),
            Err(_) => {
                // No pod yet: deleting the Job stops it (the collect loop does).
                self.shared.lock().segs[self.index].stop_failed = true;
                return Ok(());
            }
        };
        let mut st = self.shared.lock();
        let seg = &mut st.segs[self.index];
        match &got {
            Ok(()) => seg.stop_taken = true,
            Err(_) => seg.stop_failed = true,
        }
        got
    }

    /// `GET /observed?from=N` of its pod; `Ok(None)` when it does not serve it
    /// (`404`: an older pado), and an empty answer while its pod does not exist
    /// yet or once the collect loop is done with it.
    async fn observed(&mut self, from: usize) -> Result<Option<Vec<u8>>, String> {
        let pod = match self.pod() {
            Ok(Some(pod)) => pod,
            Ok(None) | Err(_) => return Ok(Some(Vec::new())),
        };
        let (status, _, lines) = self
            .request(
                http::Method::GET,
                &pod,
                &format!("observed?from={from}"),
                MAX_OBSERVED_ANSWER,
            )
            .await?;
        match status {
            200 => Ok(Some(lines)),
            404 => Ok(None),
            _ => Err(status_error(status, &lines)),
        }
    }
}

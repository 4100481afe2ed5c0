//! The coordinator's run/collect/cleanup flow against the mock Kubernetes API server
//! of `common/mock.rs`, the kube client pointed at it over plain HTTP.

mod common;

use common::mock::{running, timeline_second, Mock, PodScript, NS};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pado_fleet::coordinate::{Control, Notice};
use pado_fleet::flow::Say;
use pado_fleet::flow::{LiveSink, NoLiveView};
use pado_k8s::flow;
use pado_k8s::{FlowError, FlowOptions};
use pado_metrics::Totals;
use pado_results::merge::live::LiveSecond;
use serde_json::{json, Value};
use tokio::sync::watch;

const ID: &str = "pado-mock-abc123";

fn spec() -> pado_k8s::GeneratorSpec {
    let mut s = common::spec(ID);
    // The planned end is now: the flow asks for results at once.
    s.start_at = time::OffsetDateTime::now_utc();
    s.planned = Duration::ZERO;
    s.graceful_stop = Duration::ZERO;
    s
}

fn options(dir: &std::path::Path) -> FlowOptions {
    let mut o = FlowOptions::new(dir.to_path_buf());
    o.poll = Duration::from_millis(20);
    o.pending_timeout = Duration::from_millis(400);
    o.finish_timeout = Duration::from_secs(5);
    o.interrupt_grace = Duration::from_secs(3);
    o.live_stall_after = Duration::from_secs(20);
    o
}

/// The live view as the tests see it: each merged second as (t, requests,
/// generators reporting), the notices, and a stop when the merged requests so far
/// reach `stop_at`.
#[derive(Default)]
struct Recorder {
    seconds: Vec<(u32, u64, usize)>,
    notices: Vec<Notice>,
    stop_at: Option<u64>,
    finished: bool,
}

impl LiveSink for Recorder {
    fn second(&mut self, s: &LiveSecond, totals: &Totals) -> Control {
        self.seconds
            .push((s.second.t, s.second.requests(), s.reporting));
        match self.stop_at {
            Some(n) if totals.overall().requests >= n => {
                Control::StopAll(format!("enough at {}s", s.second.t + 1))
            }
            _ => Control::Continue,
        }
    }
    fn notice(&mut self, n: &Notice) {
        self.notices.push(n.clone());
    }
    fn finish(&mut self) {
        self.finished = true;
    }
}

fn sayer() -> (Say, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    (
        Arc::new(move |s: &str| l.lock().unwrap().push(s.to_string())),
        lines,
    )
}

fn assert_cleaned_up(mock: &Mock) {
    let del_job = mock.called(
        "DELETE",
        &format!("/apis/batch/v1/namespaces/{NS}/jobs/{ID}"),
    );
    assert!(!del_job.is_empty(), "Job not deleted");
    let body: Value = serde_json::from_slice(&del_job.last().unwrap().body).unwrap();
    assert_eq!(body["propagationPolicy"], "Background");
    assert_eq!(
        mock.called(
            "DELETE",
            &format!("/api/v1/namespaces/{NS}/configmaps/{ID}")
        )
        .len(),
        1,
        "ConfigMap not deleted once"
    );
    assert_eq!(
        mock.called("DELETE", &format!("/api/v1/namespaces/{NS}/secrets/{ID}"))
            .len(),
        1,
        "the token's Secret not deleted once"
    );
    // Every call to a pod carried the run's token, and none was refused.
    let st = mock.state.lock().unwrap();
    assert_eq!(st.refused, 0, "a pod refused the coordinator");
    for c in st.calls.iter().filter(|c| c.path.contains(":7070/proxy/")) {
        assert_eq!(
            c.token.as_deref(),
            Some(common::TOKEN),
            "{} {}",
            c.method,
            c.path
        );
    }
}

#[tokio::test]
async fn a_run_creates_collects_merges_and_cleans_up() {
    let mock = Mock::start((0..common::N).map(|i| running(i, Some(0))).collect(), None);
    let out = tempfile::tempdir().unwrap();
    let (say, lines) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let c = flow::run(
        mock.client(),
        &spec(),
        &options(out.path()),
        rx,
        say,
        &mut NoLiveView,
    )
    .await
    .unwrap();

    // Created: the Job as built, then the token's Secret and the ConfigMap owned by it.
    let calls = mock.calls();
    let first: Vec<&str> = calls.iter().take(3).map(|c| c.path.as_str()).collect();
    assert_eq!(
        first,
        [
            format!("/apis/batch/v1/namespaces/{NS}/jobs"),
            format!("/api/v1/namespaces/{NS}/secrets"),
            format!("/api/v1/namespaces/{NS}/configmaps")
        ]
    );
    let job: Value = serde_json::from_slice(&calls[0].body).unwrap();
    assert_eq!(job["metadata"]["name"], ID);
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], common::N);
    // The token is in the Secret, owned by the Job, and nowhere in the Job: the pods
    // get it from the Secret by reference.
    let secret: Value = serde_json::from_slice(&calls[1].body).unwrap();
    assert_eq!(secret["metadata"]["name"], ID);
    assert_eq!(secret["stringData"]["token"], common::TOKEN);
    assert_eq!(secret["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");
    assert!(!String::from_utf8_lossy(&calls[0].body).contains(common::TOKEN));
    let env = &job["spec"]["template"]["spec"]["containers"][0]["env"];
    let from = env
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "PADO_GENERATOR_TOKEN")
        .expect("the token's variable");
    assert_eq!(from["valueFrom"]["secretKeyRef"]["name"], ID);
    let cm: Value = serde_json::from_slice(&calls[2].body).unwrap();
    assert_eq!(cm["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");
    assert_eq!(cm["metadata"]["ownerReferences"][0]["kind"], "Job");
    assert_eq!(cm["data"]["file-1"], "id,이름\n1,김\n");
    // Pods were found by the test's label.
    let list = mock.called("GET", &format!("/api/v1/namespaces/{NS}/pods"));
    assert!(list[0]
        .query
        .contains(&("labelSelector".into(), format!("pado.dev/test-id={ID}"))));

    // Every segment's result reached the merge, unpacked byte for byte.
    assert!(c.missing.is_empty(), "{:?}", c.missing);
    assert!(!c.interrupted);
    let want: Vec<PathBuf> = (0..common::N)
        .map(|i| out.path().join(format!("segment-{i}")))
        .collect();
    assert_eq!(c.dirs, want);
    for (i, d) in c.dirs.iter().enumerate() {
        let run: Value =
            serde_json::from_slice(&std::fs::read(d.join("run.json")).unwrap()).unwrap();
        assert_eq!(run["segment"]["index"], i);
        assert_eq!(
            std::fs::read_to_string(d.join("timeline.jsonl")).unwrap(),
            format!("{{\"t\":0,\"seg\":{i}}}\n")
        );
    }
    assert_eq!(c.exit_codes, BTreeMap::from([(0, 0), (1, 0), (2, 0)]));
    // Each generator was told it may exit, after its tar was fetched.
    for p in 0..common::N {
        let name = format!("{ID}-{p}-x{p}");
        let base = format!("/api/v1/namespaces/{NS}/pods/{name}:7070/proxy");
        let calls = mock.calls();
        let tar_at = calls
            .iter()
            .position(|c| c.path == format!("{base}/result.tar"))
            .expect("tar fetched");
        let done_at = calls
            .iter()
            .position(|c| c.method == "POST" && c.path == format!("{base}/done"))
            .expect("done posted");
        assert!(tar_at < done_at);
    }
    // Where each runs is said; the generators' logs are not (all went well).
    let lines = lines.lock().unwrap().clone();
    for i in 0..common::N {
        assert!(
            lines.contains(&format!("[{i}/3] pod {ID}-{i}-x{i} running on node-{i}")),
            "{lines:?}"
        );
    }
    assert!(!lines.iter().any(|l| l.contains("결과 ok")), "{lines:?}");
    assert!(
        mock.calls().iter().all(|c| !c.path.ends_with("/log")),
        "no log read"
    );
    assert_cleaned_up(&mock);
}

#[tokio::test]
async fn a_failed_pod_is_named_and_the_rest_still_merge() {
    let mut pods: Vec<PodScript> = (0..common::N).map(|i| running(i, Some(0))).collect();
    pods[1].done = None;
    pods[1].status = json!({"phase": "Failed", "containerStatuses": [{
        "name": "pado", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
        "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    }]});
    let mock = Mock::start(pods, None);
    let out = tempfile::tempdir().unwrap();
    let (say, lines) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let c = flow::run(
        mock.client(),
        &spec(),
        &options(out.path()),
        rx,
        say,
        &mut NoLiveView,
    )
    .await
    .unwrap();
    assert_eq!(c.dirs.len(), 2);
    assert_eq!(c.missing.len(), 1);
    let m = c.missing[0].to_string();
    assert!(m.starts_with("segment 1/3 missing:"), "{m}");
    assert!(m.contains("exit code 137, OOMKilled"), "{m}");
    let lines = lines.lock().unwrap().clone();
    assert!(lines.contains(&m), "the missing segment is said");
    // The failed pod's last log lines are said, and only its.
    assert!(
        lines.contains(&"[1/3] segment 1 결과 ok".to_string()),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("segment 0 결과")),
        "{lines:?}"
    );
    let logs = mock.called(
        "GET",
        &format!("/api/v1/namespaces/{NS}/pods/{ID}-1-x1/log"),
    );
    assert_eq!(logs.len(), 1);
    assert!(logs[0].query.contains(&("tailLines".into(), "20".into())));
    assert_cleaned_up(&mock);
}

#[tokio::test]
async fn a_pod_stuck_pending_fails_the_run_with_its_reason() {
    let mut pods: Vec<PodScript> = (0..common::N).map(|i| running(i, None)).collect();
    pods[2].status = json!({"phase": "Pending", "conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient cpu."
    }]});
    let mock = Mock::start(pods, None);
    let out = tempfile::tempdir().unwrap();
    let (say, _) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let started = std::time::Instant::now();
    let err = flow::run(
        mock.client(),
        &spec(),
        &options(out.path()),
        rx,
        say,
        &mut NoLiveView,
    )
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            FlowError::Stuck {
                index: 2,
                count: 3,
                ..
            }
        ),
        "{msg}"
    );
    assert!(
        msg.contains("Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."),
        "{msg}"
    );
    assert!(started.elapsed() < Duration::from_secs(30), "bounded wait");
    assert_cleaned_up(&mock);
}

#[tokio::test]
async fn ctrl_c_stops_the_generators_collects_what_they_wrote_and_cleans_up() {
    // Running, never done until stopped: segments 0 and 1 take `POST /stop`, stop
    // gracefully and report; segment 2's proxy cannot be reached, so the Job is
    // deleted to stop it, and its pod dies before reporting.
    let mut pods: Vec<PodScript> = (0..common::N).map(|i| running(i, None)).collect();
    for p in &mut pods {
        p.on_stop = Some(0);
    }
    pods[2].tar = Vec::new();
    pods[2].proxy_fails = true;
    let mock = Mock::start(pods, Some(0));
    let out = tempfile::tempdir().unwrap();
    let (say, lines) = sayer();
    let (tx, rx) = watch::channel(0u32);
    let mut sp = spec();
    // A long planned run: only the interrupt makes the flow ask for results.
    sp.planned = Duration::from_secs(3600);
    let state = mock.state.clone();
    let presser = tokio::spawn(async move {
        // Wait until the flow is following the pods, then press Ctrl-C once.
        loop {
            let listed = state
                .lock()
                .unwrap()
                .calls
                .iter()
                .filter(|c| c.path.ends_with("/pods"))
                .count();
            if listed >= 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tx.send(1).unwrap();
        tx
    });
    let c = flow::run(
        mock.client(),
        &sp,
        &options(out.path()),
        rx,
        say,
        &mut NoLiveView,
    )
    .await
    .unwrap();
    let _tx = presser.await.unwrap();
    assert!(c.interrupted);
    assert_eq!(c.dirs.len(), 2, "{:?}", c.missing);
    assert_eq!(c.missing.len(), 1);
    let m = c.missing[0].to_string();
    assert!(
        m.starts_with("segment 2/3 missing:") && m.contains("exit code 137"),
        "{m}"
    );
    assert_eq!(c.stopped.as_deref(), Some("interrupted (Ctrl-C)"));
    // Every generator was asked to stop through its pod proxy.
    for p in 0..common::N {
        let stop = format!("/api/v1/namespaces/{NS}/pods/{ID}-{p}-x{p}:7070/proxy/stop");
        assert_eq!(mock.called("POST", &stop).len(), 1, "{stop}");
    }
    // The Job was deleted after Ctrl-C (segment 2 could not be stopped otherwise)
    // and again at cleanup.
    let deletes = mock.called(
        "DELETE",
        &format!("/apis/batch/v1/namespaces/{NS}/jobs/{ID}"),
    );
    assert_eq!(deletes.len(), 2);
    assert!(lines
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.starts_with("interrupted")));
    assert_cleaned_up(&mock);
}

#[tokio::test]
async fn a_second_ctrl_c_cleans_up_without_merging() {
    let mock = Mock::start((0..common::N).map(|i| running(i, None)).collect(), None);
    let out = tempfile::tempdir().unwrap();
    let (say, _) = sayer();
    let (tx, rx) = watch::channel(0u32);
    let mut sp = spec();
    sp.planned = Duration::from_secs(3600);
    let state = mock.state.clone();
    let presser = tokio::spawn(async move {
        while !state.lock().unwrap().job_created {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tx.send(2).unwrap();
        tx
    });
    let err = flow::run(
        mock.client(),
        &sp,
        &options(out.path()),
        rx,
        say,
        &mut NoLiveView,
    )
    .await
    .unwrap_err();
    let _tx = presser.await.unwrap();
    assert!(matches!(err, FlowError::Interrupted), "{err}");
    assert_cleaned_up(&mock);
}

#[tokio::test]
async fn a_refused_create_still_cleans_up_and_says_why() {
    // The mock answers 403 for namespace `forbidden`, as an RBAC refusal would.
    let mock = Mock::start(Vec::new(), None);
    let mut sp = spec();
    sp.namespace = "forbidden".into();
    let out = tempfile::tempdir().unwrap();
    let (say, _) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let err = flow::run(
        mock.client(),
        &sp,
        &options(out.path()),
        rx,
        say,
        &mut NoLiveView,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, FlowError::Create { .. }), "{err}");
    assert!(err.to_string().contains("Job forbidden/"), "{err}");
    assert!(err.to_string().contains("cannot create resource"), "{err}");
    // Cleanup was still attempted for both objects.
    let paths: Vec<String> = mock
        .calls()
        .into_iter()
        .filter(|c| c.method == "DELETE")
        .map(|c| c.path)
        .collect();
    assert_eq!(
        paths,
        [
            format!("/apis/batch/v1/namespaces/forbidden/jobs/{ID}"),
            format!("/api/v1/namespaces/forbidden/configmaps/{ID}"),
            format!("/api/v1/namespaces/forbidden/secrets/{ID}")
        ]
    );
}

#[tokio::test]
async fn a_pod_evicted_for_its_full_results_volume_is_named_with_the_kubelet_s_reason() {
    // What the kubelet leaves of a pod whose results emptyDir grew past its
    // sizeLimit: the pod Failed and Evicted, its container's end unknown.
    let mut pods: Vec<PodScript> = (0..common::N).map(|i| running(i, Some(0))).collect();
    pods[2].done = None;
    pods[2].status = json!({
        "phase": "Failed",
        "reason": "Evicted",
        "message": "Usage of EmptyDir volume \"results\" exceeds the limit \"1Gi\". ",
        "containerStatuses": [{
            "name": "pado", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown"}}
        }]
    });
    let mock = Mock::start(pods, None);
    let out = tempfile::tempdir().unwrap();
    let (say, _) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let c = flow::run(
        mock.client(),
        &spec(),
        &options(out.path()),
        rx,
        say,
        &mut NoLiveView,
    )
    .await
    .unwrap();
    assert_eq!(c.dirs.len(), 2);
    let m: Vec<String> = c.missing.iter().map(ToString::to_string).collect();
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].starts_with("segment 2/3 missing:"), "{m:?}");
    assert!(
        m[0].contains("Evicted: Usage of EmptyDir volume \"results\" exceeds the limit \"1Gi\""),
        "{m:?}"
    );
    assert_cleaned_up(&mock);
}

/// Pods that serve `seconds` seconds each, pod `i` sending `10 * (i + 1) + t`
/// requests in second `t`.
fn live_pods(seconds: u32, done: Option<i32>) -> Vec<PodScript> {
    (0..common::N)
        .map(|i| PodScript {
            live: (0..seconds)
                .map(|t| timeline_second(t, u64::from(10 * (i + 1) + t)))
                .collect(),
            ..running(i, done)
        })
        .collect()
}

#[tokio::test]
async fn the_live_view_gets_every_second_of_the_whole_test() {
    let mock = Mock::start(live_pods(4, Some(0)), None);
    let out = tempfile::tempdir().unwrap();
    let (say, _) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let mut view = Recorder::default();
    let c = flow::run(
        mock.client(),
        &spec(),
        &options(out.path()),
        rx,
        say,
        &mut view,
    )
    .await
    .unwrap();
    // Second t of the test: the three pods' seconds t added (10+20+30 + 3t).
    let want: Vec<(u32, u64, usize)> = (0..4).map(|t| (t, 60 + 3 * u64::from(t), 3)).collect();
    assert_eq!(view.seconds, want);
    assert!(view.notices.is_empty(), "{:?}", view.notices);
    assert!(view.finished, "the live view was ended");
    assert_eq!(c.dirs.len(), 3);
    assert_eq!(c.live_seconds, 4);
    assert!(c.stopped.is_none() && !c.interrupted);
    // Each pod's result was fetched after its feed was read to its end.
    for p in 0..common::N {
        let base = format!("/api/v1/namespaces/{NS}/pods/{ID}-{p}-x{p}:7070/proxy");
        let calls = mock.calls();
        let last_live = calls
            .iter()
            .rposition(|c| c.path == format!("{base}/live"))
            .expect("feed read");
        let tar = calls
            .iter()
            .position(|c| c.path == format!("{base}/result.tar"))
            .expect("tar fetched");
        assert!(
            last_live < tar,
            "pod {p}: feed read after the result was fetched"
        );
    }
    assert_cleaned_up(&mock);
}

#[tokio::test]
async fn a_stop_from_the_live_view_stops_every_pod_and_merges_what_they_wrote() {
    // A long planned run whose pods serve 5 seconds and then run on until stopped.
    let mut pods = live_pods(5, None);
    for p in &mut pods {
        p.on_stop = Some(0);
    }
    let mock = Mock::start(pods, None);
    let out = tempfile::tempdir().unwrap();
    let (say, _) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let mut sp = spec();
    sp.planned = Duration::from_secs(3600);
    // Stop once the merged requests reach 120: after second 1 (60 + 63).
    let mut view = Recorder {
        stop_at: Some(120),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let c = flow::run(mock.client(), &sp, &options(out.path()), rx, say, &mut view)
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "bounded");
    assert_eq!(view.notices, vec![Notice::Stopping("enough at 2s".into())]);
    for p in 0..common::N {
        let stop = format!("/api/v1/namespaces/{NS}/pods/{ID}-{p}-x{p}:7070/proxy/stop");
        assert_eq!(mock.called("POST", &stop).len(), 1, "{stop}");
    }
    assert_eq!(c.stopped.as_deref(), Some("enough at 2s"));
    assert!(!c.interrupted, "not a Ctrl-C");
    assert_eq!(c.dirs.len(), 3, "{:?}", c.missing);
    assert!(c.missing.is_empty());
    // Every pod took the stop: the Job was deleted only at cleanup.
    let deletes = mock.called(
        "DELETE",
        &format!("/apis/batch/v1/namespaces/{NS}/jobs/{ID}"),
    );
    assert_eq!(deletes.len(), 1);
    assert_cleaned_up(&mock);
}

#[tokio::test]
async fn a_pod_whose_proxy_fails_is_left_out_of_the_live_view_and_still_collected() {
    let mut pods = live_pods(3, Some(0));
    pods[1].proxy_fails = true;
    let mock = Mock::start(pods, None);
    let out = tempfile::tempdir().unwrap();
    let (say, _) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let mut sp = spec();
    // Results are asked for after a second; the feed is given up after 200 ms.
    sp.planned = Duration::from_secs(1);
    let mut opts = options(out.path());
    opts.live_stall_after = Duration::from_millis(200);
    let mut view = Recorder::default();
    let c = flow::run(mock.client(), &sp, &opts, rx, say, &mut view)
        .await
        .unwrap();
    assert_eq!(view.notices.len(), 1, "{:?}", view.notices);
    match &view.notices[0] {
        Notice::LeftOut(1, why) => assert!(why.contains("503"), "{why}"),
        n => panic!("{n:?}"),
    }
    // The live view is pods 0 and 2 only: 10 + 30 + 2t.
    let want: Vec<(u32, u64, usize)> = (0..3).map(|t| (t, 40 + 2 * u64::from(t), 2)).collect();
    assert_eq!(view.seconds, want);
    // Its result is still collected and merged.
    assert_eq!(c.dirs.len(), 3, "{:?}", c.missing);
    assert_eq!(c.exit_codes.len(), 3);
    assert_cleaned_up(&mock);
}

#[tokio::test]
async fn a_segment_whose_run_failed_is_collected_and_its_log_tail_said() {
    let mut pods: Vec<PodScript> = (0..common::N).map(|i| running(i, Some(0))).collect();
    pods[0].done = Some(1);
    let mock = Mock::start(pods, None);
    let out = tempfile::tempdir().unwrap();
    let (say, lines) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let c = flow::run(
        mock.client(),
        &spec(),
        &options(out.path()),
        rx,
        say,
        &mut NoLiveView,
    )
    .await
    .unwrap();
    assert_eq!(c.exit_codes, BTreeMap::from([(0, 1), (1, 0), (2, 0)]));
    let lines = lines.lock().unwrap().clone();
    assert!(
        lines.contains(&"[0/3] segment 0 결과 ok".to_string()),
        "{lines:?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("segment 1 결과") || l.contains("segment 2 결과")),
        "{lines:?}"
    );
}

#[tokio::test]
async fn a_change_reaches_every_running_pod_through_the_proxy_and_one_that_fails_is_named() {
    // Pods 0 and 2 run until told; pod 1's proxy answers 503.
    let mut pods = live_pods(2, None);
    pods[1].proxy_fails = true;
    let mock = Mock::start(pods, None);
    let out = tempfile::tempdir().unwrap();
    let (say, _) = sayer();
    let (_tx, rx) = watch::channel(0u32);
    let steering = pado_k8s::live::PodSteering::default();
    // Before the flow: nothing to reach, said.
    let e = steering.send(0, b"{}").unwrap_err();
    assert!(e.contains("not running"), "{e}");
    let sender = steering.clone();
    let state = mock.state.clone();
    // A dashboard's thread: a change to each pod once it runs (the flow lists the
    // pods as the Job controller makes them), then the runs end.
    let dashboard = std::thread::spawn(move || {
        let body = br#"{"action":"set_rate_factor","factor":2,"ramp_s":0.0}"#;
        let t0 = std::time::Instant::now();
        let reach = |i: usize| loop {
            match sender.send(i, body) {
                Err(e)
                    if (e.contains("not running") || e.contains("does not exist yet"))
                        && t0.elapsed() < Duration::from_secs(10) =>
                {
                    std::thread::sleep(Duration::from_millis(20))
                }
                other => break other,
            }
        };
        let got: Vec<Result<(), String>> = (0..3).map(reach).collect();
        for p in &mut state.lock().unwrap().pods {
            p.done = Some(0);
        }
        got
    });
    let mut view = Recorder::default();
    let mut opts = options(out.path());
    opts.steering = steering.clone();
    let c = flow::run(mock.client(), &spec(), &opts, rx, say, &mut view).await;
    let got = dashboard.join().unwrap();
    assert_eq!(got[0], Ok(()));
    assert_eq!(got[2], Ok(()));
    let e = got[1].as_ref().unwrap_err();
    assert!(e.contains("503") && e.contains("connection refused"), "{e}");
    let st = mock.state.lock().unwrap();
    let bodies: Vec<usize> = st.pods.iter().map(|p| p.controls.len()).collect();
    assert_eq!(bodies, vec![1, 0, 1]);
    assert_eq!(
        st.pods[2].controls[0],
        r#"{"action":"set_rate_factor","factor":2,"ramp_s":0.0}"#
    );
    // Every control call carried the run's token.
    assert!(st
        .calls
        .iter()
        .filter(|c| c.path.ends_with("/proxy/control"))
        .all(|c| c.token.as_deref() == Some(common::TOKEN)));
    drop(st);
    // The change did not get in the way of the test: every result collected.
    assert_eq!(c.unwrap().dirs.len(), 3);
    // After the flow: nothing more is sent.
    assert!(steering.send(0, b"{}").is_err());
}

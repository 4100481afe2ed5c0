//! A mock Kubernetes API server: a local HTTP server on 127.0.0.1 answering only the
//! calls `pado k8s run` makes (create ConfigMap, Secret and Job, list pods by label,
//! pod logs, the pod proxy's /live, /stop, /control, /status, /result.tar and /done, delete
//! Job, Secret and ConfigMap)
//! in namespace `loadtest`, and recording each one. Its pods are scripted
//! ([`PodScript`]) and named after the Job it was sent; like real generator pods,
//! they answer the pod proxy only with the token of the Secret created for the run
//! (`X-Pado-Token`), and `401` otherwise. Shared by the crate's flow tests and the
//! CLI's end-to-end test.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use pado_h1server::{read_request, write_response, Head, Server, ServerThread};
use serde_json::{json, Value};

/// The namespace the mock serves (`forbidden` answers 403).
pub const NS: &str = "loadtest";

/// One recorded API call.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Its `X-Pado-Token` header, if any.
    pub token: Option<String>,
}

impl Call {
    fn of(req: &pado_h1server::Request) -> Call {
        Call {
            method: req.method.clone(),
            path: req.path.clone(),
            query: req.query.clone(),
            body: req.body.clone(),
            token: req.header("x-pado-token").map(str::to_string),
        }
    }
}

/// How one generator pod behaves.
#[derive(Clone)]
pub struct PodScript {
    pub index: u32,
    /// The pod's `status` as the API returns it.
    pub status: Value,
    /// `Some(code)`: its run is over and /status says so.
    pub done: Option<i32>,
    /// Its result directory as a tar.
    pub tar: Vec<u8>,
    /// What its log says.
    pub log: String,
    /// Its timeline lines (second `t` at `live[t]`, each ending in a newline), served
    /// by `/live?from=T` with `Pado-State: done` once `done` is set.
    pub live: Vec<String>,
    /// Its pod proxy answers 503 to `/live` and `/stop` (the rest works).
    pub proxy_fails: bool,
    /// `POST /stop` ends its run with this code (`None`: the stop is taken, the run
    /// goes on).
    pub on_stop: Option<i32>,
    /// The bodies of the `POST /control` calls it took, in order.
    pub controls: Vec<String>,
}

impl PodScript {
    /// Its pod's name under Job `job`.
    pub fn name(&self, job: &str) -> String {
        format!("{job}-{}-x{}", self.index, self.index)
    }
}

#[derive(Default)]
pub struct State {
    pub calls: Vec<Call>,
    pub job_created: bool,
    /// The created Job's name (the test id).
    pub job_name: String,
    /// The token of the Secret created for the run: the pods require it.
    pub token: Option<String>,
    /// Pod proxy calls refused for a missing or wrong token.
    pub refused: u32,
    pub pods: Vec<PodScript>,
    /// When the Job is deleted, generators stop and report this code (Ctrl-C).
    done_on_job_delete: Option<i32>,
}

pub struct Mock {
    pub state: Arc<Mutex<State>>,
    /// Where it listens.
    pub addr: SocketAddr,
    _server: ServerThread,
}

impl Mock {
    pub fn start(pods: Vec<PodScript>, done_on_job_delete: Option<i32>) -> Mock {
        let state = Arc::new(Mutex::new(State {
            pods,
            done_on_job_delete,
            ..Default::default()
        }));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let st = state.clone();
        let server = ServerThread::spawn("mock-apiserver", move |stop| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                Server::from_std(listener)
                    .unwrap()
                    .serve(stop, move |stream, _| conn(stream, st.clone()))
                    .await;
            });
        })
        .unwrap();
        Mock {
            state,
            addr,
            _server: server,
        }
    }

    pub fn client(&self) -> pado_k8s::cluster::Clients {
        let mut cfg = pado_k8s::kube::Config::new(format!("http://{}", self.addr).parse().unwrap());
        cfg.default_namespace = NS.into();
        pado_k8s::cluster::Clients::from_config(cfg).unwrap()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    pub fn called(&self, method: &str, path: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method && c.path == path)
            .collect()
    }
}

async fn conn(mut stream: tokio::net::TcpStream, state: Arc<Mutex<State>>) {
    let mut buf = Vec::new();
    while let Ok(Some(req)) = read_request(&mut stream, &mut buf, 4 << 20).await {
        let (status, ctype, body, pado_state) = answer_live(&state, &req).unwrap_or_else(|| {
            let (a, b, c) = answer(&state, &req);
            (a, b, c, None)
        });
        let mut head = Head::new(status);
        head.header("Content-Type", ctype)
            .content_length(body.len() as u64);
        if let Some(st) = pado_state {
            head.header("Pado-State", st);
        }
        if write_response(&mut stream, head, &body, false)
            .await
            .is_err()
            || !req.keep_alive
        {
            return;
        }
    }
}

fn json_body(status: u16, v: Value) -> (u16, &'static str, Vec<u8>) {
    (status, "application/json", v.to_string().into_bytes())
}

fn ok_status() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200})
}

/// The pod proxy's `/live` and `/stop`, with the `Pado-State` header; `None` for
/// every other call.
fn answer_live(
    state: &Mutex<State>,
    req: &pado_h1server::Request,
) -> Option<(u16, &'static str, Vec<u8>, Option<&'static str>)> {
    let mut s = state.lock().unwrap();
    let rest = req
        .path
        .strip_prefix(&format!("/api/v1/namespaces/{NS}/pods/"))?;
    let (pod, sub) = rest.split_once(":7070/proxy/")?;
    if sub != "live" && sub != "stop" && sub != "control" {
        return None;
    }
    s.calls.push(Call::of(req));
    if !token_ok(&s, req) {
        s.refused += 1;
        return Some((
            401,
            "text/plain",
            b"this server needs its token".to_vec(),
            None,
        ));
    }
    let job = s.job_name.clone();
    let Some(p) = s.pods.iter_mut().find(|p| p.name(&job) == pod) else {
        return Some((404, "text/plain", b"no pod".to_vec(), None));
    };
    if p.proxy_fails {
        return Some((
            503,
            "text/plain",
            b"error trying to reach service: dial tcp 10.0.0.9:7070: connect: connection refused"
                .to_vec(),
            None,
        ));
    }
    Some(match (req.method.as_str(), sub) {
        ("GET", "live") => {
            let from: usize = req
                .query
                .iter()
                .find(|(k, _)| k == "from")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let body: String = p.live.iter().skip(from).cloned().collect();
            let st = if p.done.is_some() { "done" } else { "running" };
            (200, "application/x-ndjson", body.into_bytes(), Some(st))
        }
        ("POST", "stop") => {
            if let Some(c) = p.on_stop {
                p.done.get_or_insert(c);
            }
            (202, "text/plain", b"stopping".to_vec(), None)
        }
        ("POST", "control") if p.done.is_some() => (
            409,
            "application/json",
            br#"{"error":"the run has ended"}"#.to_vec(),
            None,
        ),
        ("POST", "control") => {
            p.controls
                .push(String::from_utf8_lossy(&req.body).into_owned());
            (200, "application/json", br#"{"ok":true}"#.to_vec(), None)
        }
        _ => (405, "text/plain", b"no".to_vec(), None),
    })
}

/// Whether a pod proxy call carries the run's token, as a generator pod checks it.
fn token_ok(s: &State, req: &pado_h1server::Request) -> bool {
    matches!((&s.token, req.header("x-pado-token")), (Some(t), Some(given)) if t == given)
}

fn answer(state: &Mutex<State>, req: &pado_h1server::Request) -> (u16, &'static str, Vec<u8>) {
    let mut s = state.lock().unwrap();
    s.calls.push(Call::of(req));
    let jobs = format!("/apis/batch/v1/namespaces/{NS}/jobs");
    let cms = format!("/api/v1/namespaces/{NS}/configmaps");
    let secrets = format!("/api/v1/namespaces/{NS}/secrets");
    let pods = format!("/api/v1/namespaces/{NS}/pods");
    let path = req.path.as_str();
    if path.contains("/namespaces/forbidden/") {
        return json_body(
            403,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "reason": "Forbidden", "code": 403,
                   "message": "jobs.batch is forbidden: User \"dev\" cannot create resource \"jobs\""}),
        );
    }
    match req.method.as_str() {
        "POST" if path == jobs => {
            s.job_created = true;
            let mut v: Value = serde_json::from_slice(&req.body).unwrap();
            s.job_name = v["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            v["metadata"]["uid"] = json!("job-uid-1");
            json_body(201, v)
        }
        "POST" if path == cms => json_body(201, serde_json::from_slice(&req.body).unwrap()),
        "POST" if path == secrets => {
            let v: Value = serde_json::from_slice(&req.body).unwrap();
            s.token = v["stringData"]["token"].as_str().map(str::to_string);
            json_body(201, v)
        }
        "DELETE" if path.starts_with(&format!("{secrets}/")) => json_body(200, ok_status()),
        "DELETE" if path == format!("{jobs}/{}", s.job_name) => {
            if let Some(code) = s.done_on_job_delete {
                for p in &mut s.pods {
                    if p.tar.is_empty() {
                        // Killed before it could report.
                        p.status = json!({"phase": "Failed", "containerStatuses": [{
                            "name": "pado", "image": "x", "imageID": "", "ready": false,
                            "restartCount": 0,
                            "state": {"terminated": {"exitCode": 137, "reason": "Error"}}
                        }]});
                    } else {
                        p.done.get_or_insert(code);
                    }
                }
            }
            json_body(200, ok_status())
        }
        "DELETE" if path.starts_with(&format!("{cms}/")) => json_body(200, ok_status()),
        "GET" if path == pods => {
            let items: Vec<Value> = if s.job_created {
                s.pods
                    .iter()
                    .map(|p| {
                        json!({
                            "metadata": {
                                "name": p.name(&s.job_name),
                                "namespace": NS,
                                "labels": {"pado.dev/test-id": s.job_name},
                                "annotations": {"batch.kubernetes.io/job-completion-index": p.index.to_string()},
                            },
                            "spec": {"nodeName": format!("node-{}", p.index), "containers": []},
                            "status": p.status,
                        })
                    })
                    .collect()
            } else {
                Vec::new()
            };
            json_body(
                200,
                json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}),
            )
        }
        _ => {
            let Some(rest) = path.strip_prefix(&format!("{pods}/")) else {
                return (404, "text/plain", b"no route".to_vec());
            };
            let pod = s
                .pods
                .iter()
                .find(|p| {
                    rest.starts_with(&format!("{}/", p.name(&s.job_name)))
                        || rest.starts_with(&format!("{}:7070/", p.name(&s.job_name)))
                })
                .cloned();
            let Some(pod) = pod else {
                return (404, "text/plain", b"no pod".to_vec());
            };
            let sub = rest.split_once('/').map(|x| x.1).unwrap_or_default();
            if sub.starts_with("proxy/") && !token_ok(&s, req) {
                s.refused += 1;
                return (401, "text/plain", b"this server needs its token".to_vec());
            }
            match (req.method.as_str(), sub) {
                ("GET", "log") => (200, "text/plain", pod.log.into_bytes()),
                ("GET", "proxy/status") => match pod.done {
                    None => json_body(200, json!({"state": "running"})),
                    Some(c) => json_body(200, json!({"state": "done", "exit_code": c})),
                },
                ("GET", "proxy/result.tar") if pod.done.is_some() => {
                    (200, "application/x-tar", pod.tar)
                }
                ("POST", "proxy/done") => (200, "text/plain", b"bye".to_vec()),
                _ => (409, "text/plain", b"not now".to_vec()),
            }
        }
    }
}

/// A result directory for segment `i` as a tar, as a generator would serve it.
pub fn result_tar(i: u32) -> Vec<u8> {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("run.json"),
        json!({"segment": {"index": i}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        d.path().join("timeline.jsonl"),
        format!("{{\"t\":0,\"seg\":{i}}}\n"),
    )
    .unwrap();
    pado_fleet::archive::pack_dir(d.path()).unwrap()
}

pub fn running(i: u32, done: Option<i32>) -> PodScript {
    PodScript {
        index: i,
        status: json!({"phase": "Running"}),
        done,
        tar: result_tar(i),
        log: format!("segment {i} line 1\nsegment {i} 결과 ok\n"),
        live: Vec::new(),
        proxy_fails: false,
        on_stop: None,
        controls: Vec::new(),
    }
}

/// Second `t` of a generator as its timeline has it: `requests` requests of
/// series `get`, all 200 in 1 ms, one VU.
pub fn timeline_second(t: u32, requests: u64) -> String {
    use pado_metrics::{Interval, Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats};
    let mut r = SecondRecord::new(t);
    let mut s = SeriesStats::new(SeriesKey::named("get"));
    for _ in 0..requests {
        s.record(&RequestSample {
            status: 200,
            phases: Phases {
                duration_us: 1000,
                ..Default::default()
            },
            ..Default::default()
        });
    }
    r.absorb(Interval {
        vus: 1,
        vus_max: 1,
        series: vec![s],
        ..Default::default()
    });
    let mut line = pado_results::result_dir::timeline_line(&r).unwrap();
    line.push('\n');
    line
}

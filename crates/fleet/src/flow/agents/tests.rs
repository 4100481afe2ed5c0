//! The agents' flow against real agents ([`crate::agent`]) on loopback, each
//! with a launcher that writes a planted result instead of running `pado run`.

use super::*;
use crate::agent::tests::{options, TOKEN};
use crate::agent::{self, AgentHandle, Launch, LaunchError, Started};
use crate::coordinate::tests::line;
use crate::coordinate::{Control, Notice};
use crate::flow::NoLiveView;
use crate::tls::AgentTrust;
use pado_metrics::Totals;
use pado_results::merge::live::LiveSecond;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// What each test agent does with its job.
#[derive(Clone, Default)]
struct Plan {
    /// Seconds of timeline each segment writes (segment `i`: `10 * (i + 1)`
    /// requests a second).
    seconds: u32,
    /// Each segment's exit code (0 when not given).
    codes: Vec<i32>,
    /// The segment whose agent refuses its job.
    refuse: Option<usize>,
    /// Runs go on until stopped.
    until_stopped: bool,
}

/// The test agents and what their launchers saw.
struct Fleet {
    agents: Vec<AgentHandle>,
    work: Vec<tempfile::TempDir>,
    jobs: Arc<Mutex<Vec<JobSpec>>>,
    stops: Arc<AtomicU32>,
}

fn launcher(plan: Plan, jobs: Arc<Mutex<Vec<JobSpec>>>, stops: Arc<AtomicU32>) -> Launch {
    Arc::new(move |job: &JobSpec, files: &Path, results: &Path| {
        jobs.lock().unwrap().push(job.clone());
        let i: usize = job.segment.split('/').next().unwrap().parse().unwrap();
        if plan.refuse == Some(i) {
            return Err(LaunchError::Refused("no room here: 파도".into()));
        }
        std::fs::create_dir_all(results)?;
        std::fs::write(results.join("run.json"), format!("{{\"segment\":{i}}}"))?;
        let timeline: String = (0..plan.seconds)
            .map(|t| line(t, 10 * (i as u64 + 1)))
            .collect();
        std::fs::write(results.join("timeline.jsonl"), timeline)?;
        let log = files.parent().unwrap().join(bundle::LOG_FILE);
        std::fs::write(log, format!("segment {i} 실패\x1b[2J"))?;
        let code = plan.codes.get(i).copied().unwrap_or(0);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let tx = Mutex::new(tx);
        let stops = stops.clone();
        let until_stopped = plan.until_stopped;
        Ok(Started {
            stop: Arc::new(move || {
                stops.fetch_add(1, Ordering::SeqCst);
                let _ = tx.lock().unwrap().send(());
            }),
            wait: Box::new(move || {
                if until_stopped {
                    let _ = rx.recv_timeout(Duration::from_secs(20));
                }
                code
            }),
            control: None,
        })
    })
}

impl Fleet {
    fn start(n: usize, plan: Plan) -> Fleet {
        let jobs = Arc::new(Mutex::new(Vec::new()));
        let stops = Arc::new(AtomicU32::new(0));
        let work: Vec<_> = (0..n).map(|_| tempfile::tempdir().unwrap()).collect();
        let agents = work
            .iter()
            .map(|w| {
                let launch = launcher(plan.clone(), jobs.clone(), stops.clone());
                agent::start(options(w.path()), launch).unwrap()
            })
            .collect();
        Fleet {
            agents,
            work,
            jobs,
            stops,
        }
    }

    fn agents(&self) -> Agents {
        let trust = AgentTrust::SystemRoots;
        Agents::new(
            self.agents
                .iter()
                .map(|a| {
                    GeneratorClient::new(&a.addr.to_string(), Some(TOKEN.into()), &trust).unwrap()
                })
                .collect(),
        )
    }

    /// One run of the flow on these agents, Ctrl-C counted in `interrupts`.
    fn run(
        &self,
        job: &AgentsJob,
        interrupts: watch::Receiver<u32>,
        live: &mut dyn LiveSink,
    ) -> Flown {
        let out = tempfile::tempdir().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        let say: Say = Arc::new(move |s: &str| l.lock().unwrap().push(s.to_string()));
        let mut agents = self.agents();
        let result = rt().block_on(run(
            &mut agents,
            job,
            &opts(out.path()),
            interrupts,
            say,
            live,
        ));
        let said = lines.lock().unwrap().clone();
        Flown {
            result,
            agents,
            said,
            out,
        }
    }

    /// Waits (up to 5 s) until every agent is idle and its work directory empty:
    /// told `/done`, it dropped the job.
    fn all_cleaned_up(&self) -> bool {
        let rt = rt();
        for _ in 0..250 {
            let mut agents = self.agents();
            let idle = rt.block_on(async {
                for c in &mut agents.clients {
                    if c.status().await.unwrap() != crate::status::Status::Idle {
                        return false;
                    }
                }
                true
            });
            let empty = self
                .work
                .iter()
                .all(|w| std::fs::read_dir(w.path()).unwrap().next().is_none());
            if idle && empty {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

/// What one run of the flow did.
struct Flown {
    result: Result<Collected, AgentsError>,
    /// The agents as the flow named them.
    agents: Agents,
    /// What it said.
    said: Vec<String>,
    /// Where the results went.
    out: tempfile::TempDir,
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn job() -> AgentsJob {
    AgentsJob {
        test_name: "파도 test".into(),
        files: vec![FileEntry {
            path: "s.yaml".into(),
            bytes: "name: 파도\n".as_bytes().to_vec(),
        }],
        args: vec!["s.yaml".into(), "--vus".into(), "2".into()],
        first_args: vec!["--observe".into(), "http://127.0.0.1:9/metrics".into()],
        segment_weights: Some("1,3".into()),
        start_at: SystemTime::now(),
        start_stamp: "2026-01-02T03:04:05.678Z".into(),
        run_for: Duration::ZERO,
    }
}

fn opts(out: &Path) -> AgentsOptions {
    AgentsOptions {
        out: out.to_path_buf(),
        poll: Duration::from_millis(20),
        status_every: Duration::from_millis(20),
        stall_after: Duration::from_secs(3),
        margin: Duration::from_secs(5),
        quiet: false,
    }
}

/// Each merged second as (t, requests, generators reporting); finished or not.
#[derive(Default)]
struct Recorder {
    seconds: Vec<(u32, u64, usize)>,
    notices: Vec<Notice>,
    finished: bool,
}

impl LiveSink for Recorder {
    fn second(&mut self, s: &LiveSecond, _: &Totals) -> Control {
        self.seconds
            .push((s.second.t, s.second.requests(), s.reporting));
        Control::Continue
    }
    fn notice(&mut self, n: &Notice) {
        self.notices.push(n.clone());
    }
    fn finish(&mut self) {
        self.finished = true;
    }
}

#[test]
fn every_agent_runs_its_segment_and_the_flow_returns_their_results_and_cleans_up() {
    let fleet = Fleet::start(
        2,
        Plan {
            seconds: 3,
            ..Default::default()
        },
    );
    let mut view = Recorder::default();
    let (_tx, rx) = watch::channel(0u32);
    let flown = fleet.run(&job(), rx, &mut view);
    let c = flown.result.unwrap();
    let agents = &flown.agents;
    let said = flown.said.clone();
    let out = &flown.out;
    // Each segment's own result, in segment order, unpacked where it belongs.
    let want: Vec<PathBuf> = (0..2)
        .map(|i| out.path().join(format!("segment-{i}-of-2")))
        .collect();
    assert_eq!(c.dirs, want);
    for (i, d) in c.dirs.iter().enumerate() {
        assert_eq!(
            std::fs::read_to_string(d.join("run.json")).unwrap(),
            format!("{{\"segment\":{i}}}")
        );
    }
    assert_eq!(c.exit_codes, BTreeMap::from([(0, 0), (1, 0)]));
    assert!(c.missing.is_empty() && c.stopped.is_none() && !c.is_partial());
    assert!(agents.judge_runs(&c).is_ok());
    // The live view: second t of the test is 10 + 20 requests from both.
    assert_eq!(view.seconds, vec![(0, 30, 2), (1, 30, 2), (2, 30, 2)]);
    assert!(view.finished && view.notices.is_empty());
    assert_eq!(c.live_seconds, 3);
    // Each job: the common flags, its segment, the weights, the agreed start, and
    // the observe flags on segment 0 only.
    let mut jobs = fleet.jobs.lock().unwrap().clone();
    jobs.sort_by(|a, b| a.segment.cmp(&b.segment));
    let common = ["s.yaml", "--vus", "2"];
    let tail = |i: usize| {
        let mut v: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        v.extend(
            [
                "--segment",
                &format!("{i}/2"),
                "--segment-weights",
                "1,3",
                "--start-at",
                "2026-01-02T03:04:05.678Z",
            ]
            .map(String::from),
        );
        v
    };
    let mut first = tail(0);
    first.extend(["--observe".into(), "http://127.0.0.1:9/metrics".into()]);
    assert_eq!(jobs[0].args, first);
    assert_eq!(jobs[1].args, tail(1));
    assert_eq!(jobs[1].test_name, "파도 test");
    assert_eq!(
        said,
        vec!["2 generators start at 2026-01-02T03:04:05.678Z; Ctrl-C stops them all"]
    );
    // Every agent was told `/done`: idle again, its copy gone.
    assert!(fleet.all_cleaned_up(), "an agent still holds its job");
}

#[test]
fn an_agent_that_refuses_its_job_fails_the_flow_and_the_started_ones_are_stopped() {
    let fleet = Fleet::start(
        2,
        Plan {
            seconds: 1,
            refuse: Some(1),
            until_stopped: true,
            ..Default::default()
        },
    );
    let (_tx, rx) = watch::channel(0u32);
    let flown = fleet.run(&job(), rx, &mut NoLiveView);
    let e = flown.result.unwrap_err();
    let out = &flown.out;
    let text = e.to_string();
    assert!(matches!(e, AgentsError::NotStarted { .. }), "{text}");
    assert!(
        text.starts_with("generator 1/2 (") && text.contains("no room here: 파도"),
        "{text}"
    );
    // Segment 0 had started: it was stopped, nothing fetched.
    assert_eq!(fleet.stops.load(Ordering::SeqCst), 1);
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

#[test]
fn a_busy_agent_is_named_and_no_job_is_sent() {
    let fleet = Fleet::start(
        2,
        Plan {
            seconds: 1,
            until_stopped: true,
            ..Default::default()
        },
    );
    let rt = rt();
    // Agent 1 already runs another coordinator's job.
    let mut other = fleet.agents();
    let tar = bundle::pack(
        &JobSpec {
            test_name: "other".into(),
            segment: "0/1".into(),
            args: vec!["s.yaml".into()],
        },
        &job().files,
    )
    .unwrap();
    rt.block_on(other.clients[1].expect("POST", "/job", &tar, REQUEST_TIMEOUT, 201))
        .unwrap();
    let (_tx, rx) = watch::channel(0u32);
    let flown = fleet.run(&job(), rx, &mut NoLiveView);
    let e = flown.result.unwrap_err();
    let out = &flown.out;
    assert!(matches!(e, AgentsError::Busy { .. }), "{e}");
    assert!(
        e.to_string().starts_with("generator 1/2 (")
            && e.to_string()
                .contains("busy with another job (\"running\")"),
        "{e}"
    );
    assert_eq!(
        fleet.jobs.lock().unwrap().len(),
        1,
        "only the other job ran"
    );
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

#[test]
fn ctrl_c_stops_every_agent_and_what_they_wrote_is_collected_as_partial() {
    let fleet = Fleet::start(
        2,
        Plan {
            seconds: 2,
            until_stopped: true,
            ..Default::default()
        },
    );
    let (tx, rx) = watch::channel(0u32);
    let mut j = job();
    // A long planned run: only the stop ends it.
    j.run_for = Duration::from_secs(3600);
    let presser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        tx.send(1).unwrap();
        tx
    });
    let started = Instant::now();
    let c = fleet.run(&j, rx, &mut NoLiveView).result.unwrap();
    let _tx = presser.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(15), "bounded");
    assert_eq!(fleet.stops.load(Ordering::SeqCst), 2, "every agent stopped");
    assert_eq!(c.stopped.as_deref(), Some("Ctrl-C"));
    assert!(c.interrupted && c.is_partial());
    assert_eq!(c.dirs.len(), 2, "{:?}", c.missing);
    assert!(fleet.all_cleaned_up());
}

#[test]
fn a_failed_run_is_collected_and_named_and_its_output_cannot_drive_the_terminal() {
    let fleet = Fleet::start(
        2,
        Plan {
            seconds: 1,
            codes: vec![0, 3],
            ..Default::default()
        },
    );
    let (_tx, rx) = watch::channel(0u32);
    let flown = fleet.run(&job(), rx, &mut NoLiveView);
    let c = flown.result.unwrap();
    let agents = &flown.agents;
    let said = flown.said.clone();
    assert_eq!(c.exit_codes, BTreeMap::from([(0, 0), (1, 3)]));
    assert_eq!(c.dirs.len(), 2, "its result is still merged");
    let e = agents.judge_runs(&c).unwrap_err().to_string();
    let name = &agents.names()[1];
    assert_eq!(
        e,
        format!("the run failed on {name} (exit code 3): the merged result leaves out or cuts short what it measured")
    );
    let said = said.join("\n");
    assert!(
        said.contains(&format!(
            "warning: {name}: its run failed (exit code 3); its last output:\nsegment 1 실패\\x1b[2J"
        )),
        "{said}"
    );
    assert!(!said.contains('\x1b'), "{said}");
    assert!(!said.contains("segment 0 실패"), "{said}");
}

#[test]
fn only_a_run_that_did_not_complete_fails_the_test_each_named() {
    let trust = AgentTrust::SystemRoots;
    let agents = Agents::new(
        ["127.0.0.1:7701", "127.0.0.1:7702"]
            .iter()
            .map(|u| GeneratorClient::new(u, None, &trust).unwrap())
            .collect(),
    );
    let judged = |codes: &[(u32, i32)]| {
        agents.judge_runs(&Collected {
            exit_codes: codes.iter().copied().collect(),
            ..Default::default()
        })
    };
    // Planted: segment 1's run exited 1 while 0 passed.
    let e = judged(&[(0, 0), (1, 1)]).unwrap_err().to_string();
    assert!(
        e.starts_with("the run failed on generator 1/2 (http://127.0.0.1:7702) (exit code 1):"),
        "{e}"
    );
    // An unknown exit (a status without one) is a failure too, and both are named.
    let e = judged(&[(0, -1), (1, 2)]).unwrap_err().to_string();
    assert!(
        e.contains("generator 0/2 (http://127.0.0.1:7701) (exit code -1), generator 1/2"),
        "{e}"
    );
    // A 99 was judged on its share: the merged verdict decides.
    assert!(judged(&[(0, 99), (1, 0)]).is_ok());
    assert!(judged(&[]).is_ok());
}

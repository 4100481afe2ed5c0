//! Golden-file test of the terminal summary layout: a fixed run (built in code, so
//! every number is known) must render exactly as `tests/golden/summary.txt`.
//! Regenerate after an intended layout change with `UPDATE_GOLDEN=1 cargo test`.

use pado_metrics::{
    CheckCounts, GeneratorStats, Interval, Phases, RequestSample, ScenarioStats, SecondRecord,
    SeriesKey, SeriesStats,
};
use pado_report::{build, render, LoadedRun, TextOptions};
use pado_results::{RunMeta, ScenarioMeta, StageMark, ThresholdSpec};

fn sample(status: u16, ms: u64) -> RequestSample {
    RequestSample {
        status,
        failed: status >= 400,
        phases: Phases {
            duration_us: ms * 1000,
            waiting_us: ms * 900,
            sending_us: 20,
            receiving_us: ms * 100,
            ..Default::default()
        },
        bytes_sent: 120,
        bytes_received: 900,
        ..Default::default()
    }
}

fn run() -> LoadedRun {
    let mut seconds = Vec::new();
    for t in 0..10u32 {
        let mut search = SeriesStats::new(SeriesKey {
            name: "search".into(),
            tags: vec![(
                "class".into(),
                if t % 2 == 0 { "rare" } else { "high" }.into(),
            )],
        });
        let mut detail = SeriesStats::new(SeriesKey::named("detail"));
        let n = if t < 5 { 50 } else { 100 };
        for i in 0..n {
            search.record(&sample(200, 5 + (i % 10) + t as u64));
            detail.record(&sample(
                if i == 0 && t == 7 { 503 } else { 200 },
                2 + (i % 5),
            ));
        }
        let mut sc = ScenarioStats::new("browse");
        sc.iterations = n * 2;
        for _ in 0..n {
            sc.iteration_duration.record(9_000);
        }
        // The generator had headroom: a quarter of a core, loop 1–3 ms late.
        let mut generator = GeneratorStats {
            wall_ns: 1_000_000_000,
            cpu_ns: 250_000_000 + 10_000_000 * t as u64,
            wait_ns: Some(20_000_000),
            ..Default::default()
        };
        for i in 0..100 {
            generator.lag.record(if i < 98 { 1_200 } else { 2_600 });
        }
        let mut r = SecondRecord::new(t);
        r.absorb(Interval {
            generator: Some(generator),
            vus: if t < 5 { 10 } else { 20 },
            vus_max: 20,
            series: vec![search, detail],
            scenarios: vec![sc],
            checks: vec![(
                "search: status is 200".into(),
                CheckCounts {
                    passes: n,
                    fails: 0,
                },
            )],
            ..Default::default()
        });
        seconds.push(r);
    }
    let meta = RunMeta {
        format: "pado-result".into(),
        version: 1,
        name: "golden".into(),
        pado_version: "0.0.0".into(),
        started_at: "2026-11-22T00:00:00Z".into(),
        duration_s: 10.0,
        workers: 2,
        cores_allowed: 2,
        scenarios: vec![ScenarioMeta {
            name: "browse".into(),
            executor: "ramping-vus".into(),
            description: "stages from 10 VUs: 5s→10, 5s→20".into(),
            open_model: false,
            max_vus: None,
            scripted: false,
        }],
        stages: vec![
            StageMark {
                scenario: "browse".into(),
                index: 0,
                start_s: 0.0,
                end_s: 5.0,
                label: "hold 10 VUs".into(),
                target: 10.0,
                from: Some(10.0),
            },
            StageMark {
                scenario: "browse".into(),
                index: 1,
                start_s: 5.0,
                end_s: 10.0,
                label: "hold 20 VUs".into(),
                target: 20.0,
                from: Some(20.0),
            },
        ],
        thresholds: vec![
            ThresholdSpec {
                metric: "http_req_duration".into(),
                expr: "p(95) < 20".into(),
                abort_on_fail: false,
                window_s: None,
            },
            ThresholdSpec {
                metric: "http_req_failed".into(),
                expr: "rate < 0.0001".into(),
                abort_on_fail: false,
                window_s: None,
            },
        ],
        ..Default::default()
    };
    LoadedRun::from_seconds(meta, seconds)
}

#[test]
fn terminal_summary_matches_the_golden_file() {
    let summary = build(&run()).unwrap();
    let text = render(&summary, TextOptions { color: false });
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/summary.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, &text).unwrap();
    }
    let golden = std::fs::read_to_string(path).expect("golden file (UPDATE_GOLDEN=1 to create)");
    assert_eq!(
        text, golden,
        "layout changed; if intended, UPDATE_GOLDEN=1 cargo test"
    );
    // The fixed numbers the layout shows.
    assert_eq!(summary.requests, 1500);
    assert_eq!(summary.failed, 1);
    assert_eq!(summary.stages.len(), 2);
    assert_eq!(summary.stages[0].requests, 500);
    assert_eq!(summary.stages[1].requests, 1000);
    // Half the seconds reached 200 req/s, all of them 100.
    assert_eq!(summary.stability.rps_p50, 200.0);
    assert_eq!(summary.stability.rps_p95, 100.0);
    assert!(!summary.thresholds_ok);
    // One worker's figures per second: 0.25–0.34 cores of 2, 2% waiting, no rule held.
    let g = summary.generator.as_ref().unwrap();
    assert!(!g.saturated);
    assert_eq!(g.seconds, 10);
    assert!((g.cpu_cores_mean - 0.295).abs() < 1e-9, "{g:?}");
    assert!((g.busiest_worker_peak - 0.34).abs() < 1e-9, "{g:?}");
    // p99 falls in the (2, 3] ms bucket, capped at the largest wake-up.
    assert_eq!((g.lag_p99_ms, g.lag_max_ms), (2.6, 2.6));
}

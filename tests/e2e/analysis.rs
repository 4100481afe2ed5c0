//! What the analysis says about real runs: no drift claimed where latency only rose
//! with the load, drift found (at the planted rate) where a server slows under
//! constant load, no knee where throughput grew with the VUs, no knee or USL claims
//! from runs too short to tell, and dropped arrivals named with their fix.

use pado_demo_target::TargetOptions;
use pado_testkit::TestServer;

use crate::harness::{exclusive_machine, num, run};

fn verdict(s: &serde_json::Value) -> Vec<String> {
    s["verdict"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_demo_stress_profile_has_no_drift_line() {
    // One connection at 50 ms a query (20 queries/s): the stress mix saturates it
    // well below 40 VUs, so latency climbs through the ramp and stays high through
    // the hold.
    let t = pado_demo_target::start(TargetOptions {
        posts: 20_000,
        pool_size: 1,
        workers: 4,
        query_cost: std::time::Duration::from_millis(50),
        ..Default::default()
    })
    .expect("demo target starts");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/board-stress.yaml");
    let r = run(
        "demo-drift",
        &[
            example,
            "--target",
            &t.base_url(),
            "--stages",
            "5s:2,5s:40,40s:40",
        ],
    );
    assert!(r.code() == 0 || r.code() == 99, "{}", r.stderr());
    let s = r.summary();
    let stages = s["stages"].as_array().unwrap();
    let (ramp, hold) = (
        num(&stages[0], "latency_ms.mean"),
        num(&stages[2], "latency_ms.mean"),
    );
    eprintln!(
        "demo-drift: mean latency ramp {ramp:.1} ms, hold {hold:.1} ms; drift {}",
        s["drift"]
    );
    // Not vacuous: latency rose with the load (what a whole-run regression took for
    // drift).
    assert!(hold > 2.0 * ramp, "ramp {ramp} ms, hold {hold} ms");
    assert!(
        !verdict(&s).iter().any(|v| v.contains("drift")),
        "{:?}",
        s["verdict"]
    );
    // The hold was measured, on its own.
    for d in s["drift_periods"].as_array().unwrap() {
        assert_eq!(d["period"]["label"], "hold 40 VUs", "{d}");
        assert!(num(&d["period"], "start_s") >= 10.0, "{d}");
    }
}

#[test]
fn a_server_slowing_under_constant_load_is_drift_at_the_planted_rate() {
    // 5 ms plus 2 ms for every second since the server started: 7,200 ms per hour.
    let srv = TestServer::start();
    let r = run(
        "slowing",
        &[
            "--url",
            &srv.url("/slowing?base_ms=5&per_s_ms=2"),
            "--vus",
            "4",
            "--duration",
            "42s",
        ],
    );
    assert!(r.code() == 0 || r.code() == 99, "{}", r.stderr());
    let s = r.summary();
    let d = &s["drift"];
    let slope = num(d, "slope_per_hour");
    eprintln!("slowing: drift {d}");
    assert_eq!(d["notable"], true, "{d}");
    assert!(
        (slope / 7200.0 - 1.0).abs() <= 0.25,
        "slope {slope} ms/h: {d}"
    );
    let line = verdict(&s)
        .into_iter()
        .find(|v| v.contains("drifted"))
        .expect("a drift line");
    assert!(line.contains("under steady load (hold 4 VUs"), "{line}");
    // The method is in summary.json and the docs, not repeated in every summary.
    assert!(!r.stdout().contains("drift method:"), "{}", r.stdout());
    assert!(
        s["drift_method"]
            .as_str()
            .is_some_and(|m| m.starts_with("least-squares")),
        "{s}"
    );
}

#[test]
fn a_linear_think_time_step_ramp_reports_no_knee() {
    // 10/30/50/70 VUs, 5 s each, 500 ms think against an idle server: 2 req/s per VU.
    // Alone on the machine: a starved generator (rightly) gets no analysis at all.
    let _machine = exclusive_machine();
    let srv = TestServer::start();
    let r = run(
        "linear-steps",
        &[
            "--url",
            &srv.url("/"),
            "--step-ramp",
            "10:20:5s:70",
            "--think",
            "500ms",
        ],
    );
    assert!(r.code() == 0 || r.code() == 99, "{}", r.stderr());
    let s = r.summary();
    let sat = &s["saturation"];
    eprintln!("linear-steps: saturation {sat}");
    if s["generator"]["saturated"] == true {
        // Other processes starved pado: no claims either way, and nothing else to
        // check here.
        eprintln!(
            "linear-steps: generator saturated: {}",
            s["generator"]["message"]
        );
        assert!(sat.is_null(), "{sat}");
        assert!(!r.stdout().contains("stopped keeping up"));
        return;
    }
    assert_eq!(sat["outcome"], "no_saturation_reached", "{sat}");
    // No knee: the knee's field holds none; the highest load has its own.
    assert!(sat["throughput_knee_load"].is_null(), "{sat}");
    assert_eq!(num(sat, "highest_load"), 70.0, "{sat}");
    // The top level's rate, not one dragged down by the run's last partial second.
    let best = num(sat, "max_rps");
    assert!(best > 0.8 * 140.0, "best {best} req/s: {sat}");
    if let Some(p) = sat["usl"]["peak_rps"].as_f64() {
        assert!(p >= 0.98 * best, "predicted peak {p} below measured {best}");
    }
    let v = verdict(&s);
    assert!(
        v.iter().any(|l| l.starts_with("no saturation reached")),
        "{v:?}"
    );
    let stdout = r.stdout();
    for claim in [
        "stopped keeping up",
        "after the load fell",
        "inf req/s",
        "NaN",
    ] {
        assert!(!stdout.contains(claim), "{claim}: {stdout}");
    }
}

#[test]
fn a_run_cut_short_makes_no_knee_or_usl_claims() {
    let srv = TestServer::start();
    let r = run(
        "short",
        &["--url", &srv.url("/delay/20"), "--stages", "1s:5,1s:20"],
    );
    assert!(r.code() == 0 || r.code() == 99, "{}", r.stderr());
    let s = r.summary();
    assert!(s["saturation"].is_null(), "{}", s["saturation"]);
    let stdout = r.stdout();
    for claim in ["stopped keeping up", "scalability (USL", "avalanche"] {
        assert!(!stdout.contains(claim), "{claim}: {stdout}");
    }
}

#[test]
fn dropped_arrivals_are_named_in_the_verdict() {
    // 5 VUs at 200 ms each send at most 25 of the 100 arrivals a second.
    let srv = TestServer::start();
    let r = run(
        "dropped",
        &[
            "--url",
            &srv.url("/delay/200"),
            "--rate",
            "100",
            "--max-vus",
            "5",
            "--duration",
            "3s",
        ],
    );
    assert!(r.code() == 0 || r.code() == 99, "{}", r.stderr());
    let s = r.summary();
    let dropped = num(&s, "dropped_iterations");
    let started = num(&s, "iterations") + num(&s, "iterations_interrupted");
    let share = dropped / (dropped + started);
    assert!(share > 0.5, "{s}");
    let line = verdict(&s)
        .into_iter()
        .find(|v| v.contains("never sent"))
        .expect("a dropped line");
    assert!(
        line.starts_with(&format!("{:.0}% of the planned arrivals", share * 100.0)),
        "{line}"
    );
    assert!(
        line.contains(
            "the VU pool (max 5) was exhausted; raise --max-vus (or max_vus in the file)"
        ),
        "{line}"
    );
}

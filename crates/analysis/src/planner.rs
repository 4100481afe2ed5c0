//! Capacity planning as seed 001 does it by hand: from daily active users and the
//! requests each makes, the average and peak request rates; from the time one
//! scenario takes, the virtual users that produce that rate (Little's law); from a
//! target response time, the throughput to aim for and the worker threads a server
//! needs. Every figure comes with its formula so users can check it.

use serde::Serialize;

/// What the user knows.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanInput {
    /// Daily active users.
    pub dau: f64,
    /// Requests one user makes per day (in this scenario).
    pub requests_per_user: f64,
    /// Peak-to-average factor (safety factor); seed 001 uses 4.
    pub peak_factor: f64,
    /// Seconds one pass of the scenario takes (think time included).
    pub scenario_time_s: f64,
    /// Requests in one pass of the scenario; `None` when the user did not say:
    /// one pass is then taken to be the user's whole day of requests
    /// (`requests_per_user`), as seed 001 does.
    pub requests_per_scenario: Option<f64>,
    /// The response time to hold, in seconds.
    pub target_response_s: f64,
}

impl PlanInput {
    /// Requests in one pass of the scenario: as given, else the user's whole day
    /// of requests (`requests_per_user`).
    pub fn requests_per_pass(&self) -> f64 {
        self.requests_per_scenario.unwrap_or(self.requests_per_user)
    }
}

/// The plan, every figure with the formula that gave it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// DAU × requests per user / 86,400.
    pub avg_rps: f64,
    /// Average RPS × peak factor.
    pub peak_rps: f64,
    /// Average RPS × T / R, rounded up: VUs that generate the average rate.
    pub avg_vus: u64,
    /// Peak RPS × T / R, rounded up.
    pub peak_vus: u64,
    /// Average VUs / target response time: throughput to aim for.
    pub avg_target_tps: f64,
    /// Peak VUs / target response time.
    pub peak_target_tps: f64,
    /// Peak RPS × target response time (Little's law L = λW), rounded up: requests
    /// in flight at the peak, the least number of server worker threads.
    pub peak_concurrency: u64,
    /// Worker threads to configure: the peak concurrency with 25% headroom.
    pub suggested_workers: u64,
    /// Lines `name = formula = value`, for printing.
    pub formulas: Vec<String>,
}

/// Why the inputs cannot make a plan.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    /// A value that must be positive is not.
    #[error("{0} must be a positive number")]
    NotPositive(&'static str),
}

fn positive(v: f64, name: &'static str) -> Result<(), PlanError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(PlanError::NotPositive(name))
    }
}

/// Ceil that ignores floating-point noise (`130.00000000001` is 130).
fn ceil(v: f64) -> u64 {
    (v - 1e-9).ceil().max(0.0) as u64
}

/// Compute the plan.
pub fn plan(i: &PlanInput) -> Result<Plan, PlanError> {
    positive(i.dau, "--dau")?;
    positive(i.requests_per_user, "--requests-per-user")?;
    positive(i.peak_factor, "--peak-factor")?;
    positive(i.scenario_time_s, "--scenario-time")?;
    let requests_per_scenario = i.requests_per_pass();
    positive(requests_per_scenario, "--requests-per-scenario")?;
    positive(i.target_response_s, "--response-time")?;
    let avg_rps = i.dau * i.requests_per_user / 86_400.0;
    let peak_rps = avg_rps * i.peak_factor;
    let per = i.scenario_time_s / requests_per_scenario;
    let avg_vus = ceil(avg_rps * per);
    let peak_vus = ceil(peak_rps * per);
    let avg_target_tps = avg_vus as f64 / i.target_response_s;
    let peak_target_tps = peak_vus as f64 / i.target_response_s;
    let peak_concurrency = ceil(peak_rps * i.target_response_s);
    let suggested_workers = ceil(peak_concurrency as f64 * 1.25).max(1);
    let f = |v: f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.3}")
        }
    };
    let formulas = vec![
        format!(
            "average RPS   = DAU × requests per user / 86400 = {} × {} / 86400 = {}",
            f(i.dau),
            f(i.requests_per_user),
            f(avg_rps)
        ),
        format!(
            "peak RPS      = average RPS × peak factor = {} × {} = {}",
            f(avg_rps),
            f(i.peak_factor),
            f(peak_rps)
        ),
        format!(
            "VUs           = RPS × T / R = {} × {} / {} = {} (peak: {} × {} / {} = {})",
            f(avg_rps),
            f(i.scenario_time_s),
            f(requests_per_scenario),
            avg_vus,
            f(peak_rps),
            f(i.scenario_time_s),
            f(requests_per_scenario),
            peak_vus
        ),
        format!(
            "target TPS    = VUs / response time = {} / {} = {} (peak: {}): with no think time",
            avg_vus,
            f(i.target_response_s),
            f(avg_target_tps),
            f(peak_target_tps)
        ),
        format!(
            "in flight     = peak RPS × response time (Little's law) = {} × {} = {} → {} worker threads with 25% headroom",
            f(peak_rps),
            f(i.target_response_s),
            peak_concurrency,
            suggested_workers
        ),
    ];
    Ok(Plan {
        avg_rps,
        peak_rps,
        avg_vus,
        peak_vus,
        avg_target_tps,
        peak_target_tps,
        peak_concurrency,
        suggested_workers,
        formulas,
    })
}

/// Seconds between the starts of one VU's iterations (`think: { pacing }`) so that
/// `vus` VUs, each sending one request per iteration, send `rps` requests per second.
/// About T / R (scenario time over requests per pass); exact for the whole VUs.
pub fn pacing_s(vus: u64, rps: f64) -> f64 {
    vus as f64 / rps
}

/// A scenario with an average-load and a peak-load test, one after the other, that
/// sends the planned load as written: the plan's VUs, each sending one request per
/// iteration, paced (`think: { pacing }`) so that together they send the planned
/// requests per second. Editing in a flow of several requests means pacing one
/// pass of the flow instead (the comments say how).
pub fn scenario_skeleton(i: &PlanInput, p: &Plan, target: &str) -> String {
    let rt_ms = (i.target_response_s * 1000.0).round() as u64;
    // A JSON string is a YAML double-quoted scalar: any URL stays one value.
    let target = serde_json::to_string(target).unwrap_or_else(|_| "\"\"".into());
    let avg_pacing = pacing_s(p.avg_vus, p.avg_rps);
    let peak_pacing = pacing_s(p.peak_vus, p.peak_rps);
    // Seconds to the millisecond (`57.6s`, `0.2s`), at least 1 ms.
    let secs = |v: f64| {
        let ms = (v * 1000.0).round().max(1.0);
        let text = format!("{:.3}", ms / 1000.0);
        format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
    };
    format!(
        r#"# Written by `pado plan`: {avg_rps:.3} req/s on average, {peak_rps:.3} at the peak.
# As written it sends that load: {avg_vus} VUs (then {peak_vus} at the peak), each sending one
# request and starting it again every {avg_pacing} ({peak_pacing} at the peak) -- the
# plan's T / R, the time one pass of the flow takes over its requests.
# To use your own flow of {r} requests per pass, put its steps under `flow:` and set
# `pacing` to the time one pass takes, {t}s: the VUs then still send the planned rate.
# Replace `GET /` with a page of your service. The two tests' steps have names of
# their own, so the report shows the average and the peak apart.
name: capacity-plan
target: {target}
thresholds:
  http_req_duration: ["avg < {rt_ms}"]
  http_req_failed: ["rate < 0.01"]
scenarios:
  average:
    executor: ramping-vus
    stages:
      - {{ duration: 2m, target: {avg_vus} }}
      - {{ duration: 10m, target: {avg_vus} }}
      - {{ duration: 1m, target: 0 }}
    flow:
      - {{ name: average-first-step, request: "GET /" }}
    think: {{ pacing: {avg_pacing} }}
  peak:
    executor: ramping-vus
    start_time: 13m
    stages:
      - {{ duration: 2m, target: {peak_vus} }}
      - {{ duration: 10m, target: {peak_vus} }}
      - {{ duration: 1m, target: 0 }}
    flow:
      - {{ name: peak-first-step, request: "GET /" }}
    think: {{ pacing: {peak_pacing} }}
"#,
        avg_rps = p.avg_rps,
        peak_rps = p.peak_rps,
        avg_vus = p.avg_vus,
        peak_vus = p.peak_vus,
        avg_pacing = secs(avg_pacing),
        peak_pacing = secs(peak_pacing),
        t = i.scenario_time_s,
        r = i.requests_per_pass(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 001's scenario 2: DAU 25,000, 18.5 requests per user per day, safety
    /// factor 4, one pass takes 1,000 s for 18.5 requests, 500 ms response time.
    /// The post computes 5.4 / 21.6 RPS, 300 / 1,200 VUs (rounded up to hundreds by
    /// hand) and 600 / 2,400 TPS.
    #[test]
    fn reproduces_the_hand_calculation() {
        let i = PlanInput {
            dau: 25_000.0,
            requests_per_user: 18.5,
            peak_factor: 4.0,
            scenario_time_s: 1000.0,
            requests_per_scenario: Some(18.5),
            target_response_s: 0.5,
        };
        let p = plan(&i).unwrap();
        assert!((p.avg_rps - 25_000.0 * 18.5 / 86_400.0).abs() < 1e-12);
        assert_eq!(format!("{:.1}", p.avg_rps), "5.4");
        assert_eq!(format!("{:.1}", p.peak_rps), "21.4");
        // 5.353 × 1000 / 18.5 = 289.35 → 290 VUs; the post rounds to 300.
        assert_eq!(p.avg_vus, 290);
        assert_eq!(p.peak_vus, 1158);
        assert_eq!(p.avg_target_tps, 580.0);
        assert_eq!(p.peak_target_tps, 2316.0);
        // Little: 21.41 req/s × 0.5 s = 10.7 in flight → 11, ×1.25 → 14 threads.
        assert_eq!(p.peak_concurrency, 11);
        assert_eq!(p.suggested_workers, 14);
        assert!(
            p.formulas[0].contains("25000 × 18.500 / 86400 = 5.353"),
            "{}",
            p.formulas[0]
        );
        // With the post's own rounded rate (5.4 req/s) the VUs are its 300 exactly.
        let hand = 5.4 * 1000.0 / 18.5;
        assert_eq!(ceil(hand), 292);
        assert_eq!((hand / 100.0).ceil() * 100.0, 300.0);
    }

    #[test]
    fn scenario_one_and_the_skeleton_parse() {
        let i = PlanInput {
            dau: 25_000.0,
            requests_per_user: 7.5,
            peak_factor: 4.0,
            scenario_time_s: 430.0,
            requests_per_scenario: Some(7.5),
            target_response_s: 0.5,
        };
        let p = plan(&i).unwrap();
        assert_eq!(format!("{:.1}", p.avg_rps), "2.2");
        assert_eq!(p.avg_vus, 125); // 2.170 × 430 / 7.5 = 124.4; the post says 130
        assert_eq!(p.peak_vus, 498); // the post says 510
        let sk = scenario_skeleton(&i, &p, "http://127.0.0.1:8080");
        assert!(
            sk.contains("target: 125") && sk.contains("target: 498"),
            "{sk}"
        );
        assert!(sk.contains("avg < 500"));
        assert!(sk.contains("target: \"http://127.0.0.1:8080\""), "{sk}");
        // 125 VUs at 2.170 req/s: one request every 57.6 s each.
        assert!(sk.contains("think: { pacing: 57.6s }"), "{sk}");
    }

    /// Without `--requests-per-scenario` one pass is the user's day: the VUs are
    /// the same as when it is given equal to `requests_per_user`, and differ
    /// when it is given otherwise.
    #[test]
    fn requests_per_scenario_defaults_to_requests_per_user() {
        let given = |r| PlanInput {
            dau: 25_000.0,
            requests_per_user: 18.5,
            peak_factor: 4.0,
            scenario_time_s: 1000.0,
            requests_per_scenario: r,
            target_response_s: 0.5,
        };
        let default = plan(&given(None)).unwrap();
        assert_eq!(default, plan(&given(Some(18.5))).unwrap());
        assert_eq!(default.avg_vus, 290);
        assert_ne!(default.avg_vus, plan(&given(Some(9.25))).unwrap().avg_vus);
        assert_eq!(
            plan(&given(Some(0.0))),
            Err(PlanError::NotPositive("--requests-per-scenario"))
        );
    }

    #[test]
    fn bad_inputs_are_named() {
        let mut i = PlanInput {
            dau: 0.0,
            requests_per_user: 1.0,
            peak_factor: 1.0,
            scenario_time_s: 1.0,
            requests_per_scenario: Some(1.0),
            target_response_s: 1.0,
        };
        assert_eq!(plan(&i), Err(PlanError::NotPositive("--dau")));
        i.dau = 1.0;
        i.target_response_s = f64::NAN;
        assert_eq!(plan(&i), Err(PlanError::NotPositive("--response-time")));
    }
}

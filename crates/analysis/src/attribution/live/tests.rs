use pado_metrics::ScrapedSample;
use pado_results::{Observations, ObservedSeries};

use super::*;
use crate::attribution::tests::{obs, spring};

/// A run that saturates at second 30: 4 VUs at 100 req/s each until then, 16 VUs
/// for 15 s and 32 VUs for 15 s more at about the same throughput (800 req/s)
/// with p95 rising: a knee at 16 VUs, the window 30..60, low load 0..30.
fn saturating(until: u32) -> Vec<LoadSample> {
    (0..until)
        .map(|t| {
            let (load, rps, p95) = match t {
                0..30 => (4.0, 400.0, 10.0),
                30..45 => (16.0, 800.0, 20.0),
                _ => (32.0, 810.0, 40.0),
            };
            LoadSample {
                t,
                load,
                rps,
                p95_ms: Some(p95),
            }
        })
        .collect()
}

fn app(series: Vec<ObservedSeries>) -> Observations {
    obs(&[("app", "http://127.0.0.1:8080/metrics")], series)
}

/// `series` as scraped up to (not including) second `until`.
fn scraped_until(series: &[ObservedSeries], until: f64) -> Observations {
    app(series
        .iter()
        .map(|s| ObservedSeries {
            points: s.points.iter().copied().filter(|p| p.0 < until).collect(),
            ..s.clone()
        })
        .collect())
}

/// A service with room everywhere: 3 of 8 workers busy, nothing queued, the DB
/// pool at 1 of 4 (spring's series, the workers eased).
fn roomy() -> Vec<ObservedSeries> {
    spring(false)
        .into_iter()
        .map(|mut s| {
            let v = match s.name.as_str() {
                "executor_active_threads" => Some(3.0),
                "executor_queued_tasks" => Some(0.0),
                _ => None,
            };
            if let Some(v) = v {
                s.points.iter_mut().for_each(|p| p.1 = v);
            }
            s
        })
        .collect()
}

#[test]
fn a_full_db_pool_at_the_knee_is_the_likely_limit_and_the_reports_top_row() {
    let series = spring(true);
    let o = app(series);
    let samples = saturating(60);
    let h = hint(&samples, 60.0, &o, Vec::new()).expect("observed");
    assert_eq!(h.status, HintStatus::Limit, "{h:#?}");
    let c = h.component.as_ref().unwrap();
    assert_eq!(c.component, "DB pool HikariPool-1");
    assert_eq!(c.verdict, Verdict::Yes);
    assert_eq!(h.confidence, Some(Confidence::High));
    assert!(
        h.text
            .starts_with("likely limit: DB pool HikariPool-1 (app) ("),
        "{}",
        h.text
    );
    let w = h.window.as_ref().unwrap();
    assert_eq!((w.start_s, w.end_s), (30.0, 60.0));
    // The report's table of the same run: its top row is the hint's.
    let sat = crate::saturation::analyse(&samples, 60.0);
    let t = table(&samples, sat.as_ref(), &o, Vec::new()).unwrap();
    assert_eq!(Some(&t.components[0]), h.component.as_ref());
}

#[test]
fn before_the_load_saturates_no_limit_is_seen_and_a_roomy_service_has_none() {
    // Second 25 of the same run: one level (4 VUs), the pool not yet full.
    let h = hint(
        &saturating(25),
        25.0,
        &scraped_until(&spring(true), 25.0),
        Vec::new(),
    )
    .unwrap();
    assert_eq!(h.status, HintStatus::NoLimit, "{h:#?}");
    assert!(h.component.is_none() && h.confidence.is_none());
    assert!(h.text.starts_with("no limit seen yet"), "{}", h.text);
    // The whole run against a service with room everywhere: none, at the end too.
    let h = hint(&saturating(60), 60.0, &app(roomy()), Vec::new()).unwrap();
    assert_eq!(h.status, HintStatus::NoLimit, "{h:#?}");
}

#[test]
fn too_little_data_is_said_with_what_is_missing_never_a_guess() {
    let o = app(spring(true));
    // 6 s of load.
    let h = hint(&saturating(6), 6.0, &o, Vec::new()).unwrap();
    assert_eq!(h.status, HintStatus::Waiting);
    assert_eq!(h.loaded_seconds, 6);
    assert_eq!(
        h.needs.as_deref(),
        Some("needs 10 s of load (has 6 s)"),
        "{h:#?}"
    );
    // The whole run, but a scrape every 15 s: 2 inside the window 30..60.
    let thin = app(spring(true)
        .into_iter()
        .map(|s| ObservedSeries {
            points: s
                .points
                .iter()
                .copied()
                .filter(|p| p.0 % 15.0 == 0.0)
                .collect(),
            ..s
        })
        .collect());
    let h = hint(&saturating(60), 60.0, &thin, Vec::new()).unwrap();
    assert_eq!(h.status, HintStatus::Waiting, "{h:#?}");
    assert_eq!(h.scrapes_in_window, 2);
    assert!(
        h.needs.as_deref().unwrap().starts_with("needs 3 scrapes"),
        "{h:#?}"
    );
    assert!(h.component.is_none());
    // Nothing observed: no hint at all.
    assert!(hint(&saturating(60), 60.0, &Observations::default(), Vec::new()).is_none());
}

#[test]
fn scrapes_as_they_arrive_build_what_observe_jsonl_reads_back() {
    let planted = spring(true);
    let mut so_far = ObservationsSoFar::default();
    for t in 0..60 {
        let at = t as f64;
        let mut samples: Vec<ScrapedSample> = planted
            .iter()
            .map(|s| ScrapedSample {
                name: s.name.clone(),
                // Labels in another order than sorted: the key sorts them.
                labels: s
                    .labels
                    .iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                value: s.points[t].1,
                kind: s.kind,
            })
            .collect();
        // A family the table never reads is not kept.
        samples.push(ScrapedSample {
            name: "http_server_requests_seconds_bucket".into(),
            labels: Vec::new(),
            value: 9000.0,
            kind: pado_metrics::MetricType::Gauge,
        });
        so_far.scrape("app", at, &samples);
    }
    let got = so_far.observations();
    assert_eq!(got.series, planted);
    assert_eq!(got.endpoints.len(), 1);
    assert_eq!(got.endpoints[0].scrapes, 60);
    // The hint over them is the one over the planted series.
    let samples = saturating(60);
    assert_eq!(
        hint(&samples, 60.0, got, Vec::new()),
        hint(&samples, 60.0, &app(planted), Vec::new())
    );
}

//! Planted truths: each rule fires where the series was built to drift and stays
//! quiet where it was built not to, including the awkward cases (a heap's sawtooth,
//! caches filling up, a pool busy from the first second, a ramp).

use std::collections::BTreeMap;

use pado_metrics::MetricType;
use pado_results::{EndpointLog, Observations, ObservedSeries, StageMark};

use super::*;
use crate::drift::{drift_in_periods, steady_periods, Drift};

const MIB: f64 = 1024.0 * 1024.0;

/// A gauge scraped every second over `0..secs`.
fn gauge(
    name: &str,
    labels: &[(&str, &str)],
    secs: u32,
    f: impl FnMut(f64) -> f64,
) -> ObservedSeries {
    series(name, labels, MetricType::Gauge, secs, f)
}

fn series(
    name: &str,
    labels: &[(&str, &str)],
    kind: MetricType,
    secs: u32,
    mut f: impl FnMut(f64) -> f64,
) -> ObservedSeries {
    ObservedSeries {
        endpoint: "app".into(),
        name: name.into(),
        labels: labels
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<BTreeMap<_, _>>(),
        kind,
        points: (0..secs).map(|t| (t as f64, f(t as f64))).collect(),
    }
}

fn observed(series: Vec<ObservedSeries>) -> Observations {
    Observations {
        endpoints: vec![EndpointLog {
            name: "app".into(),
            ..Default::default()
        }],
        series,
    }
}

fn hold(start_s: f64, end_s: f64) -> SteadyPeriod {
    SteadyPeriod {
        label: "hold 200 it/s".into(),
        start_s,
        end_s,
    }
}

/// AR(1) noise (φ = 0.8) of standard deviation about `sd`: scrapes are not independent.
fn ar(seed: u64, sd: f64) -> impl FnMut() -> f64 {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut e = 0.0;
    move || {
        e = 0.8 * e + 0.6 * sd * 1.7 * (rng.f64() - 0.5) * 2.0;
        e
    }
}

fn soak_of(periods: &[SteadyPeriod], series: Vec<ObservedSeries>) -> Soak {
    analyse(periods, &[], &observed(series), &[]).expect("a period long enough")
}

/// The 60-second soak's shape: memory growing 2 MiB/s on 40 MiB is a leak; found,
/// with its slope and levels close to the truth.
#[test]
fn a_steady_leak_is_suspected() {
    let mut noise = ar(1, 0.5 * MIB);
    let rss = gauge("process_resident_memory_bytes", &[], 65, |t| {
        40.0 * MIB + 2.0 * MIB * t + noise()
    });
    let s = soak_of(&[hold(0.0, 65.0)], vec![rss]);
    assert_eq!(s.verdict, Verdict::LeakSuspected, "{s:?}");
    let r = s.findings().next().unwrap();
    assert_eq!(r.resource, Resource::Memory);
    assert!(r.bytes && !r.levelled_off);
    assert!(
        (r.slope_per_hour / (2.0 * MIB * 3600.0) - 1.0).abs() < 0.1,
        "{r:?}"
    );
    // The floor fit sits a little under the mean line, and its ends are the first
    // and last windows' middles: within 6 MiB of the truth at 5 s and 64 s.
    assert!((r.from - 50.0 * MIB).abs() < 6.0 * MIB, "{r:?}");
    assert!((r.to - 168.0 * MIB).abs() < 6.0 * MIB, "{r:?}");
}

/// Flat memory with autocorrelated noise is stable, seed after seed.
#[test]
fn flat_memory_is_stable() {
    let alarms = (1..=40u64)
        .filter(|&seed| {
            let mut noise = ar(seed * 7919, 2.0 * MIB);
            let rss = gauge("process_resident_memory_bytes", &[], 300, |_| {
                60.0 * MIB + noise()
            });
            soak_of(&[hold(0.0, 300.0)], vec![rss]).verdict != Verdict::Stable
        })
        .count();
    assert_eq!(alarms, 0, "{alarms} of 40 flat series were called leaks");
}

/// Caches filling up: memory climbs for the first minute, then holds. Not a leak.
#[test]
fn memory_that_fills_and_then_holds_is_not_a_leak() {
    let mut noise = ar(3, 0.3 * MIB);
    let rss = gauge("process_resident_memory_bytes", &[], 300, |t| {
        40.0 * MIB + 60.0 * MIB * (t / 60.0).min(1.0) + noise()
    });
    let s = soak_of(&[hold(0.0, 300.0)], vec![rss]);
    assert_eq!(s.verdict, Verdict::Stable, "{s:?}");
    let r = &s.resources[0];
    assert!(!r.notable, "{r:?}");
    // The same climb that never stops is a leak.
    let mut noise = ar(3, 0.3 * MIB);
    let rss = gauge("process_resident_memory_bytes", &[], 300, |t| {
        40.0 * MIB + 60.0 * MIB * (t / 60.0) + noise()
    });
    assert_eq!(
        soak_of(&[hold(0.0, 300.0)], vec![rss]).verdict,
        Verdict::LeakSuspected
    );
}

/// A collected heap: a sawtooth of 200 MiB every 10 s. Its floor rising by 0.5 MiB/s
/// is a leak; a flat floor under the same sawtooth is not, however much the peaks
/// vary. Non-heap memory (classes loading) is not judged.
#[test]
fn a_heap_is_judged_by_the_floor_its_collections_reach() {
    let heap = |rise: f64, seed: u64| {
        let mut rng = fastrand::Rng::with_seed(seed);
        gauge(
            "jvm_memory_used_bytes",
            &[("area", "heap"), ("id", "G1 Old Gen")],
            600,
            move |t| {
                let peak = 150.0 + 100.0 * rng.f64();
                100.0 * MIB + rise * MIB * t + (t % 10.0) / 10.0 * peak * MIB
            },
        )
    };
    let s = soak_of(&[hold(0.0, 600.0)], vec![heap(0.5, 5)]);
    assert_eq!(s.verdict, Verdict::LeakSuspected, "{s:?}");
    let s = soak_of(&[hold(0.0, 600.0)], vec![heap(0.0, 6)]);
    assert_eq!(s.verdict, Verdict::Stable, "{s:?}");
    let metaspace = gauge(
        "jvm_memory_used_bytes",
        &[("area", "nonheap"), ("id", "Metaspace")],
        600,
        |t| 50.0 * MIB + MIB * t,
    );
    let s = soak_of(&[hold(0.0, 600.0)], vec![metaspace]);
    assert!(s.resources.is_empty(), "{s:?}");
}

/// A pool at its maximum from the first second, with requests queueing for it at a
/// steady depth: saturated, not drifting.
#[test]
fn a_pool_busy_from_the_first_second_is_not_drift() {
    let mut rng = fastrand::Rng::with_seed(9);
    let active = gauge(
        "hikaricp_connections_active",
        &[("pool", "HikariPool-1")],
        120,
        |_| 10.0,
    );
    let pending = gauge(
        "hikaricp_connections_pending",
        &[("pool", "HikariPool-1")],
        120,
        move |_| rng.u32(2..9) as f64,
    );
    let s = soak_of(&[hold(0.0, 120.0)], vec![active, pending]);
    assert_eq!(s.verdict, Verdict::Stable, "{s:?}");
    assert_eq!(s.resources.len(), 2, "{s:?}");
}

/// A connection leak: one more connection in use every 10 s at the same load.
#[test]
fn a_connection_leak_is_pool_drift() {
    let mut rng = fastrand::Rng::with_seed(10);
    let active = gauge(
        "hikaricp_connections_active",
        &[("pool", "HikariPool-1")],
        65,
        move |t| 2.0 + (t / 10.0).floor() + rng.u32(0..2) as f64,
    );
    let s = soak_of(&[hold(0.0, 65.0)], vec![active]);
    assert_eq!(s.verdict, Verdict::PoolDrift, "{s:?}");
    let r = s.findings().next().unwrap();
    assert_eq!(r.resource, Resource::Pool);
    assert!((r.slope_per_hour / 360.0 - 1.0).abs() < 0.25, "{r:?}");
}

/// Memory that grows while the load ramps up and holds while it holds: the ramp is
/// not measured, so no leak; the same memory still growing in the hold is one.
#[test]
fn a_ramp_is_not_a_leak() {
    let mark = |index: usize, start_s: f64, end_s: f64, from: f64, to: f64| StageMark {
        scenario: "s".into(),
        index,
        start_s,
        end_s,
        label: if from == to {
            format!("hold {to} VUs")
        } else {
            format!("ramp {from}→{to} VUs")
        },
        target: to,
        from: Some(from),
    };
    let stages = [
        mark(0, 0.0, 30.0, 0.0, 100.0),
        mark(1, 30.0, 100.0, 100.0, 100.0),
    ];
    let periods = steady_periods(&stages, &[], 100.0);
    assert_eq!(periods.len(), 1);
    let mut noise = ar(12, 0.2 * MIB);
    let ramp = gauge("process_resident_memory_bytes", &[], 100, |t| {
        40.0 * MIB + 3.0 * MIB * t.min(30.0) + noise()
    });
    assert_eq!(soak_of(&periods, vec![ramp]).verdict, Verdict::Stable);
    let mut noise = ar(12, 0.2 * MIB);
    let leak = gauge("process_resident_memory_bytes", &[], 100, |t| {
        40.0 * MIB + 3.0 * MIB * t + noise()
    });
    assert_eq!(
        soak_of(&periods, vec![leak]).verdict,
        Verdict::LeakSuspected
    );
}

/// Descriptors or threads that keep growing are leaks too; a flat count is not.
#[test]
fn descriptor_and_thread_leaks() {
    let fds = gauge("process_open_fds", &[], 65, |t| 40.0 + (t / 2.0).floor());
    let threads = gauge("jvm_threads_live_threads", &[], 65, |t| {
        30.0 + (t as u32 % 3) as f64
    });
    let s = soak_of(&[hold(0.0, 65.0)], vec![threads, fds]);
    assert_eq!(s.verdict, Verdict::LeakSuspected, "{s:?}");
    let f: Vec<_> = s.findings().collect();
    assert_eq!(f.len(), 1, "{s:?}");
    assert_eq!(f[0].resource, Resource::Descriptors);
    // Notable first.
    assert_eq!(s.resources[0].resource, Resource::Descriptors);
}

/// Latency that drifts while the resources observed hold (or are not observed) is
/// latency drift; nothing at all is stable.
#[test]
fn latency_drift_alone_and_nothing_at_all() {
    let p = hold(0.0, 120.0);
    let lat: Vec<(f64, f64)> = (0..120)
        .map(|t| (t as f64, 20.0 + 0.2 * t as f64))
        .collect();
    let d = drift_in_periods(std::slice::from_ref(&p), &lat);
    assert!(d[0].drift.notable);
    let s = analyse(std::slice::from_ref(&p), &d, &Observations::default(), &[]).unwrap();
    assert_eq!(s.verdict, Verdict::LatencyDrift);
    assert!(!s.observed);
    let flat = gauge("process_resident_memory_bytes", &[], 120, |_| 50.0 * MIB);
    let s = analyse(std::slice::from_ref(&p), &d, &observed(vec![flat]), &[]).unwrap();
    assert_eq!(s.verdict, Verdict::LatencyDrift);
    assert!(s.observed);
    let quiet = [PeriodDrift {
        period: p.clone(),
        drift: Drift {
            notable: false,
            ..d[0].drift
        },
    }];
    let s = analyse(
        std::slice::from_ref(&p),
        &quiet,
        &Observations::default(),
        &[],
    )
    .unwrap();
    assert_eq!(s.verdict, Verdict::Stable);
    assert!((s.steady_s - 115.0).abs() < 1e-9);
    // No period long enough: nothing to say.
    assert!(analyse(&[hold(0.0, 20.0)], &[], &Observations::default(), &[]).is_none());
}

#[test]
fn what_is_read_as_which_resource() {
    let g = |name: &str, labels: &[(&str, &str)]| gauge(name, labels, 1, |_| 0.0);
    assert_eq!(
        classify(&g("process_resident_memory_bytes", &[])),
        Some(Resource::Memory)
    );
    assert_eq!(
        classify(&g("db_pool_connections_active", &[])),
        Some(Resource::Pool)
    );
    assert_eq!(
        classify(&g("redis_pool_connections_pending", &[])),
        Some(Resource::Waiting)
    );
    assert_eq!(classify(&g("go_goroutines", &[])), Some(Resource::Threads));
    // Host memory and pools' maximums are not a process's leak or use.
    assert_eq!(classify(&g("node_memory_MemFree_bytes", &[])), None);
    assert_eq!(classify(&g("hikaricp_connections_max", &[])), None);
    // Counters are rates, not levels.
    let c = series(
        "db_pool_connections_active",
        &[],
        MetricType::Counter,
        1,
        |_| 0.0,
    );
    assert_eq!(classify(&c), None);
    assert!(wanted("go_goroutines") && wanted("db_pool_connections_active"));
    assert!(!wanted("http_server_requests_seconds_count"));
}

/// Memory that climbs through half the period and then holds rose significantly
/// overall, but not in the second half: reported as levelled off, not as a leak.
#[test]
fn a_rise_that_stops_halfway_is_levelled_off() {
    let mut noise = ar(21, 0.3 * MIB);
    let rss = gauge("process_resident_memory_bytes", &[], 600, |t| {
        40.0 * MIB + 80.0 * MIB * (t / 300.0).min(1.0) + noise()
    });
    let s = soak_of(&[hold(0.0, 600.0)], vec![rss]);
    assert_eq!(s.verdict, Verdict::Stable, "{s:?}");
    assert!(s.resources[0].levelled_off, "{s:?}");
}

/// pado's own memory is judged by the same rule, apart from the verdict: a rise
/// there is the generator's.
#[test]
fn the_generators_own_memory_is_judged_apart() {
    let flat: Vec<(f64, f64)> = (0..120)
        .map(|t| (t as f64, 20.0 * MIB + (t % 3) as f64 * 4096.0))
        .collect();
    let s = analyse(&[hold(0.0, 120.0)], &[], &Observations::default(), &flat).unwrap();
    let g = s.generator.as_ref().unwrap();
    assert!(!g.notable && g.endpoint == "pado", "{g:?}");
    let growing: Vec<(f64, f64)> = (0..120)
        .map(|t| (t as f64, 20.0 * MIB + t as f64 * MIB))
        .collect();
    let s = analyse(&[hold(0.0, 120.0)], &[], &Observations::default(), &growing).unwrap();
    assert!(s.generator.as_ref().unwrap().notable);
    assert_eq!(s.verdict, Verdict::Stable);
}

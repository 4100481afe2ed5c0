use std::collections::BTreeMap;

use pado_metrics::MetricType;
use pado_results::{EndpointLog, Observations, ObservedSeries};

use super::*;
use crate::saturation::LoadSample;

/// Scrapes every second from 0 to 59: low load for 0..20, saturation 30..60.
fn series(
    ep: &str,
    name: &str,
    labels: &[(&str, &str)],
    kind: MetricType,
    f: impl Fn(f64) -> f64,
) -> ObservedSeries {
    ObservedSeries {
        endpoint: ep.into(),
        name: name.into(),
        labels: labels
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<BTreeMap<_, _>>(),
        kind,
        points: (0..60).map(|t| (t as f64, f(t as f64))).collect(),
    }
}

fn gauge(ep: &str, name: &str, labels: &[(&str, &str)], f: impl Fn(f64) -> f64) -> ObservedSeries {
    series(ep, name, labels, MetricType::Gauge, f)
}

fn counter(
    ep: &str,
    name: &str,
    labels: &[(&str, &str)],
    per_s: impl Fn(f64) -> f64,
) -> ObservedSeries {
    // The counter at t is the integral of the rate over the seconds before it.
    let mut s = series(ep, name, labels, MetricType::Counter, |_| 0.0);
    let mut acc = 0.0;
    for p in s.points.iter_mut() {
        p.1 = acc;
        acc += per_s(p.0);
    }
    s
}

pub(super) fn obs(endpoints: &[(&str, &str)], series: Vec<ObservedSeries>) -> Observations {
    Observations {
        endpoints: endpoints
            .iter()
            .map(|(n, u)| EndpointLog {
                name: n.to_string(),
                url: u.to_string(),
                interval_s: 1.0,
                scrapes: 60,
                ..Default::default()
            })
            .collect(),
        series,
    }
}

fn hot(t: f64) -> bool {
    t >= 30.0
}

fn windows_fixed() -> (Window, Option<Window>) {
    (
        Window::new("sat", 30.0, 60.0),
        Some(Window::new("low", 0.0, 20.0)),
    )
}

/// A Spring-style service: 8 workers, a pool of `pool` connections.
pub(super) fn spring(pool_limited: bool) -> Vec<ObservedSeries> {
    let (workers, pool) = (8.0, 4.0);
    vec![
        gauge("app", "system_cpu_count", &[], |_| 4.0),
        gauge("app", "process_cpu_usage", &[], |t| {
            if hot(t) {
                0.35
            } else {
                0.1
            }
        }),
        gauge(
            "app",
            "executor_pool_max_threads",
            &[("name", "http")],
            |_| workers,
        ),
        gauge("app", "executor_active_threads", &[("name", "http")], |t| {
            if hot(t) {
                workers
            } else {
                2.0
            }
        }),
        gauge("app", "executor_queued_tasks", &[("name", "http")], |t| {
            if hot(t) {
                40.0
            } else {
                0.0
            }
        }),
        gauge(
            "app",
            "hikaricp_connections_max",
            &[("pool", "HikariPool-1")],
            |_| pool,
        ),
        gauge(
            "app",
            "hikaricp_connections_active",
            &[("pool", "HikariPool-1")],
            |t| {
                if hot(t) && pool_limited {
                    pool
                } else {
                    1.0
                }
            },
        ),
        gauge(
            "app",
            "hikaricp_connections_pending",
            &[("pool", "HikariPool-1")],
            |t| {
                if hot(t) && pool_limited {
                    workers - pool
                } else {
                    0.0
                }
            },
        ),
        counter(
            "app",
            "hikaricp_connections_acquire_seconds_sum",
            &[("pool", "HikariPool-1")],
            |t| {
                if hot(t) && pool_limited {
                    5.0
                } else {
                    0.001
                }
            },
        ),
        counter(
            "app",
            "hikaricp_connections_acquire_seconds_count",
            &[("pool", "HikariPool-1")],
            |_| 100.0,
        ),
    ]
}

fn find<'a>(a: &'a Attribution, name: &str) -> &'a Component {
    a.components
        .iter()
        .find(|c| c.component.starts_with(name))
        .unwrap_or_else(|| panic!("no `{name}` in {:#?}", a.components))
}

/// The table for series of one endpoint `app`, over the fixed windows.
pub(super) fn attribute_app(series: Vec<ObservedSeries>) -> Attribution {
    let (w, b) = windows_fixed();
    attribute(
        &obs(&[("app", "http://127.0.0.1:8080/metrics")], series),
        w,
        b,
        true,
        Vec::new(),
    )
}

#[test]
fn worker_pool_limit_when_connections_are_free() {
    let a = attribute_app(spring(false));
    assert_eq!(
        find(&a, "Worker pool").verdict,
        Verdict::Yes,
        "{:#?}",
        a.components
    );
    assert_eq!(find(&a, "DB pool").verdict, Verdict::No);
    assert_eq!(find(&a, "CPU (process)").verdict, Verdict::No);
    assert_eq!(a.limit.as_deref(), Some("Worker pool `http` (app)"));
    let wp = find(&a, "Worker pool");
    assert!(
        wp.state.contains("8/8 busy") && wp.state.contains("40 queued"),
        "{}",
        wp.state
    );
    assert_eq!(wp.baseline.as_deref(), Some("2 busy, 0 queued"));
    // Limits sort first.
    assert_eq!(a.components[0].verdict, Verdict::Yes);
}

#[test]
fn connection_pool_limit_makes_busy_workers_a_consequence() {
    let a = attribute_app(spring(true));
    let pool = find(&a, "DB pool");
    assert_eq!(pool.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(
        pool.state.contains("4/4 active") && pool.state.contains("4 pending"),
        "{}",
        pool.state
    );
    // 5 s of waiting per second over 100 acquisitions: 50 ms each.
    assert!(pool.state.contains("acquire 50 ms"), "{}", pool.state);
    let wp = find(&a, "Worker pool");
    assert_eq!(wp.verdict, Verdict::Consequence);
    assert!(wp.evidence.contains("waits on DB pool"), "{}", wp.evidence);
    assert_eq!(a.limit.as_deref(), Some("DB pool HikariPool-1 (app)"));
}

#[test]
fn cpu_saturation_explains_pools_and_gc_explains_cpu() {
    let (w, b) = windows_fixed();
    let mut s = spring(true);
    s[1] = gauge("app", "process_cpu_usage", &[], |t| {
        if hot(t) {
            0.97
        } else {
            0.2
        }
    });
    let a = attribute(
        &obs(&[("app", "u")], s.clone()),
        w.clone(),
        b.clone(),
        true,
        Vec::new(),
    );
    assert_eq!(find(&a, "CPU (process)").verdict, Verdict::Yes);
    assert_eq!(find(&a, "DB pool").verdict, Verdict::Consequence);
    assert_eq!(find(&a, "Worker pool").verdict, Verdict::Consequence);
    assert_eq!(a.limit.as_deref(), Some("CPU (process) (app)"));

    // Now GC eats 30% of the time: CPU becomes its consequence.
    s.push(counter(
        "app",
        "jvm_gc_pause_seconds_sum",
        &[("action", "end of minor GC")],
        |t| if hot(t) { 0.3 } else { 0.001 },
    ));
    s.push(gauge(
        "app",
        "jvm_gc_pause_seconds_max",
        &[("action", "end of minor GC")],
        |_| 0.045,
    ));
    let a = attribute(&obs(&[("app", "u")], s), w, b, true, Vec::new());
    let gc = find(&a, "JVM GC");
    assert_eq!(gc.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(
        gc.state.starts_with("30.0% of time") && gc.state.contains("longest 45 ms"),
        "{}",
        gc.state
    );
    assert_eq!(find(&a, "CPU (process)").verdict, Verdict::Consequence);
    assert_eq!(a.limit.as_deref(), Some("JVM GC (app)"));
}

#[test]
fn node_exporter_cpu_load_and_memory() {
    let (w, b) = windows_fixed();
    let mut s = Vec::new();
    for cpu in ["0", "1"] {
        // 95% busy when hot: idle 0.05 s per second per core.
        s.push(counter(
            "node",
            "node_cpu_seconds_total",
            &[("cpu", cpu), ("mode", "idle")],
            |t| if hot(t) { 0.05 } else { 0.8 },
        ));
        s.push(counter(
            "node",
            "node_cpu_seconds_total",
            &[("cpu", cpu), ("mode", "user")],
            |t| if hot(t) { 0.9 } else { 0.2 },
        ));
    }
    s.push(gauge("node", "node_load1", &[], |t| {
        if hot(t) {
            15.0
        } else {
            0.5
        }
    }));
    s.push(gauge("node", "node_memory_MemTotal_bytes", &[], |_| {
        8.0 * 1073741824.0
    }));
    s.push(gauge("node", "node_memory_MemAvailable_bytes", &[], |_| {
        6.0 * 1073741824.0
    }));
    // A Go service on the same host: CPU seconds without a core count.
    s.push(counter("svc", "process_cpu_seconds_total", &[], |t| {
        if hot(t) {
            1.9
        } else {
            0.3
        }
    }));
    let a = attribute(
        &obs(
            &[
                ("node", "http://127.0.0.1:9100/metrics"),
                ("svc", "http://127.0.0.1:8080/metrics"),
            ],
            s,
        ),
        w,
        b,
        true,
        Vec::new(),
    );
    let cpu = find(&a, "CPU (machine)");
    assert_eq!(cpu.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(
        cpu.state.contains("95% busy of 2 cores") && cpu.state.contains("load1 15 (7.5× cores)"),
        "{}",
        cpu.state
    );
    assert_eq!(cpu.baseline.as_deref(), Some("20% busy"));
    assert_eq!(find(&a, "Memory (machine)").verdict, Verdict::No);
    // The service's CPU is judged against the node's cores (same host).
    let p = find(&a, "CPU (process)");
    assert_eq!(p.endpoint, "svc");
    assert!(
        p.state.starts_with("95% of the 2 cores it may use"),
        "{}",
        p.state
    );
    assert_eq!(p.verdict, Verdict::Yes);
}

#[test]
fn backends_and_generic_rules() {
    let (w, b) = windows_fixed();
    let s = vec![
        gauge("mysql", "mysql_up", &[], |_| 1.0),
        gauge(
            "mysql",
            "mysql_global_status_threads_connected",
            &[],
            |_| 20.0,
        ),
        gauge(
            "mysql",
            "mysql_global_variables_max_connections",
            &[],
            |_| 151.0,
        ),
        gauge(
            "mysql",
            "mysql_global_status_innodb_row_lock_current_waits",
            &[],
            |_| 0.0,
        ),
        counter("mysql", "mysql_global_status_slow_queries", &[], |_| 0.0),
        gauge("redis", "redis_up", &[], |_| 1.0),
        counter("redis", "redis_cpu_user_seconds_total", &[], |_| 0.02),
        counter("redis", "redis_commands_processed_total", &[], |_| 50.0),
        gauge("redis", "redis_connected_clients", &[], |_| 3.0),
        gauge("redis", "redis_config_maxclients", &[], |_| 10000.0),
        // Unknown families: a semaphore at its limit and a growing backlog.
        gauge("app", "grpc_inflight_active", &[], |t| {
            if hot(t) {
                64.0
            } else {
                3.0
            }
        }),
        gauge("app", "grpc_inflight_max", &[], |_| 64.0),
        gauge("app", "kafka_consumer_backlog", &[], |t| {
            if hot(t) {
                t * 100.0
            } else {
                0.0
            }
        }),
        gauge("app", "cache_entries_used", &[], |_| 10.0),
        gauge("app", "cache_entries_max", &[], |_| 1000.0),
    ];
    let a = attribute(
        &obs(&[("mysql", "u"), ("redis", "u"), ("app", "u")], s),
        w,
        b,
        true,
        Vec::new(),
    );
    let m = find(&a, "MySQL");
    assert_eq!(m.verdict, Verdict::No, "{:#?}", a.components);
    assert!(m.state.contains("20/151 connections"), "{}", m.state);
    let r = find(&a, "Redis");
    assert_eq!(r.verdict, Verdict::No);
    assert!(
        r.state.contains("50 ops/s") && r.state.contains("CPU 2% of its one thread"),
        "{}",
        r.state
    );
    assert_eq!(find(&a, "grpc_inflight_active").verdict, Verdict::Yes);
    assert_eq!(find(&a, "kafka_consumer_backlog").verdict, Verdict::Yes);
    assert!(
        !a.components
            .iter()
            .any(|c| c.component.starts_with("cache_entries")),
        "quiet rows are not listed"
    );
}

#[test]
fn windows_follow_the_knee_or_the_peak() {
    let samples: Vec<LoadSample> = (0..60)
        .map(|t| LoadSample {
            t,
            load: if t < 20 {
                10.0
            } else if t < 40 {
                50.0
            } else {
                100.0
            },
            rps: 0.0,
            p95_ms: None,
        })
        .collect();
    let sat = Saturation {
        outcome: crate::saturation::Outcome::Knee,
        levels: 3,
        throughput_knee_load: Some(50.0),
        highest_load: 100.0,
        max_rps: 1.0,
        throughput_falls: false,
        latency_knee_load: None,
        baseline_p95_ms: None,
        recovery_s: None,
        usl: None,
    };
    let (w, b, saturated) = windows(&samples, Some(&sat)).unwrap();
    assert!(saturated);
    assert_eq!((w.start_s, w.end_s), (20.0, 60.0));
    let b = b.unwrap();
    assert_eq!((b.start_s, b.end_s), (0.0, 20.0));
    // No saturation: the peak.
    let (w, b, saturated) = windows(&samples, None).unwrap();
    assert!(!saturated);
    assert_eq!((w.start_s, w.end_s), (40.0, 60.0));
    assert_eq!((b.unwrap().start_s), 0.0);
}

#[test]
fn a_saturated_generator_is_listed_first_and_the_targets_rows_stand() {
    let (w, b) = windows_fixed();
    let g = crate::self_check::GeneratorCheck {
        saturated: true,
        message: "pado waited on the run queue 66% of the time".into(),
        cores_allowed: 1,
        cpu_cores_mean: 0.3,
        busiest_worker_peak: 0.33,
        run_queue_wait_share: Some(0.66),
        lag_p99_ms: 28.0,
        ..Default::default()
    };
    let a = attribute(
        &obs(&[("app", "u")], spring(true)),
        w.clone(),
        b.clone(),
        true,
        vec![generator_component(&g)],
    );
    let gen = find(&a, "pado (load generator)");
    assert_eq!(gen.verdict, Verdict::Yes);
    assert!(
        gen.state.contains("run-queue wait 66%") && gen.state.contains("lag p99 28 ms"),
        "{}",
        gen.state
    );
    assert!(gen.evidence.contains("66%"), "{}", gen.evidence);
    // What the target's metrics show is still the target's.
    assert_eq!(find(&a, "DB pool").verdict, Verdict::Yes);
    assert_eq!(find(&a, "Worker pool").verdict, Verdict::Consequence);
    assert_eq!(
        a.limit.as_deref(),
        Some("pado (load generator) (self-check), DB pool HikariPool-1 (app)")
    );
    // With headroom it is a quiet row.
    let ok = crate::self_check::GeneratorCheck {
        saturated: false,
        ..g
    };
    let a = attribute(
        &obs(&[("app", "u")], spring(true)),
        w,
        b,
        true,
        vec![generator_component(&ok)],
    );
    assert_eq!(find(&a, "pado (load generator)").verdict, Verdict::No);
    assert_eq!(a.limit.as_deref(), Some("DB pool HikariPool-1 (app)"));
}

/// Issue #28: pado on a busy machine used 1% of a core and its loop woke up to
/// 12.5 ms late (p99) against 274 ms latencies. It delivered the load: its row is
/// not a limit, does not read "0.0 cores … SATURATED", and says the delay.
#[test]
fn a_delayed_generator_is_not_a_limit_and_says_its_delay() {
    use crate::self_check::{check, GenSecond, RunFigures};
    let (w, b) = windows_fixed();
    let secs: Vec<GenSecond> = (0..20)
        .map(|t| GenSecond {
            t,
            span_s: 1.0,
            cores: 0.01,
            busy_max: 0.01,
            wait_share: Some(0.04),
            wait_max: Some(0.05),
            lag_p99_ms: 12.5,
            lag_max_ms: 30.0,
            rss_bytes: None,
        })
        .collect();
    let run = RunFigures {
        cores_allowed: 1,
        workers: 1,
        lag_p99_ms: 12.5,
        lag_max_ms: 30.0,
        latency_p50_ms: Some(274.0),
        iterations_started: 2_000,
        ..Default::default()
    };
    let g = check(&secs, &run).unwrap();
    let a = attribute(
        &obs(&[("app", "u")], spring(true)),
        w.clone(),
        b.clone(),
        true,
        vec![generator_component(&g)],
    );
    let gen = find(&a, "pado (load generator)");
    assert_eq!(gen.verdict, Verdict::No, "{gen:?}");
    assert!(
        gen.state.starts_with("cpu 0.01 of 1 core,"),
        "{}",
        gen.state
    );
    assert!(gen.state.ends_with("(delayed)"), "{}", gen.state);
    assert!(
        !gen.state.to_lowercase().contains("saturated"),
        "{}",
        gen.state
    );
    assert!(
        gen.evidence
            .contains("timings may carry up to 12.5 ms of scheduling delay"),
        "{}",
        gen.evidence
    );
    // The target's limit is named alone, first.
    assert_eq!(a.limit.as_deref(), Some("DB pool HikariPool-1 (app)"));
    assert_eq!(a.components[0].component, "DB pool HikariPool-1");
    // The same pado busy on its core capped the load: then it is a limit, worded
    // as saturated.
    let busy: Vec<GenSecond> = secs
        .iter()
        .map(|s| GenSecond {
            cores: 0.97,
            busy_max: 0.97,
            ..*s
        })
        .collect();
    let g = check(&busy, &run).unwrap();
    let gen = generator_component(&g);
    assert_eq!(gen.verdict, Verdict::Yes);
    assert!(gen.state.ends_with("(saturated)"), "{}", gen.state);
}

/// A JVM allowed `count` CPUs (`system_cpu_count`) on a host of `host` CPUs,
/// spending `busy_hot` core-seconds per second of CPU time when hot (0.4 when
/// cold), with Micrometer's gauge computed as `getProcessCpuLoad()` does: the
/// same CPU time as a share of all the host's CPUs. Four workers, all busy with
/// a queue when hot.
fn pinned_jvm(count: f64, host: f64, busy_hot: f64) -> Vec<ObservedSeries> {
    let busy = move |t: f64| if hot(t) { busy_hot } else { 0.4 };
    vec![
        gauge("app", "system_cpu_count", &[], move |_| count),
        gauge("app", "process_cpu_usage", &[], move |t| busy(t) / host),
        counter("app", "process_cpu_time_ns_total", &[], move |t| {
            busy(t) * 1e9
        }),
        gauge("app", "system_cpu_usage", &[], move |t| {
            (busy(t) + 0.1) / host
        }),
        gauge(
            "app",
            "executor_pool_max_threads",
            &[("name", "workers")],
            |_| 4.0,
        ),
        gauge(
            "app",
            "executor_active_threads",
            &[("name", "workers")],
            |t| if hot(t) { 4.0 } else { 1.0 },
        ),
        gauge(
            "app",
            "executor_queued_tasks",
            &[("name", "workers")],
            |t| {
                if hot(t) {
                    12.0
                } else {
                    0.0
                }
            },
        ),
    ]
}

#[test]
fn a_pinned_jvm_busy_on_its_one_core_is_the_limit_and_its_workers_wait_on_it() {
    // The case seen on a real service: pinned to 1 of 2 cores and busy on it, the
    // CPU-time counter grows 0.99 s per second while the gauge says 0.50.
    let a = attribute_app(pinned_jvm(1.0, 2.0, 0.99));
    let p = find(&a, "CPU (process)");
    assert_eq!(p.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(
        p.state
            .starts_with("99% of the 1 core it may use (0.99 busy)"),
        "{}",
        p.state
    );
    assert_eq!(p.baseline.as_deref(), Some("40%"));
    assert!(
        p.evidence.contains("process_cpu_time_ns_total")
            && p.evidence.contains("1 core allowed (system_cpu_count)")
            && p.evidence.contains("process_cpu_usage read 49%"),
        "{}",
        p.evidence
    );
    let wp = find(&a, "Worker pool `workers`");
    assert_eq!(wp.verdict, Verdict::Consequence, "{:#?}", a.components);
    assert!(
        wp.evidence.contains("waits on CPU (process)"),
        "{}",
        wp.evidence
    );
    assert_eq!(a.limit.as_deref(), Some("CPU (process) (app)"));
    let m = find(&a, "CPU (machine)");
    assert_eq!(m.verdict, Verdict::No);
    // system_cpu_count is what the process may use, not the machine's count.
    assert_eq!(m.state, "55% busy", "{}", m.state);
}

#[test]
fn a_pinned_jvm_with_cpu_to_spare_is_not_the_limit() {
    // Half of its one core: the workers are the limit, not the CPU.
    let a = attribute_app(pinned_jvm(1.0, 2.0, 0.5));
    let p = find(&a, "CPU (process)");
    assert_eq!(p.verdict, Verdict::No, "{:#?}", a.components);
    assert!(p.state.starts_with("50% of the 1 core"), "{}", p.state);
    assert!(
        p.evidence.contains("process_cpu_time_ns_total"),
        "{}",
        p.evidence
    );
    assert_eq!(find(&a, "Worker pool `workers`").verdict, Verdict::Yes);
    // Unpinned on the same host, the same CPU time is a quarter of the machine.
    let a = attribute_app(pinned_jvm(2.0, 2.0, 0.99));
    assert_eq!(find(&a, "CPU (process)").verdict, Verdict::No);
    assert!(
        !find(&a, "CPU (process)").evidence.contains("read"),
        "the gauge agrees with the counter when the process may use every CPU"
    );
}

#[test]
fn cpu_seconds_are_judged_against_a_cgroup_quota() {
    // A Go or Python service (Prometheus client's CPU seconds) in a container
    // with a quota of 1.5 CPUs on a 4-CPU host, busy 1.4 cores.
    let svc = |quota_us: f64| {
        vec![
            gauge("app", "system_cpu_count", &[], |_| 4.0),
            counter("app", "process_cpu_seconds_total", &[], |t| {
                if hot(t) {
                    1.4
                } else {
                    0.3
                }
            }),
            gauge(
                "app",
                "container_spec_cpu_quota",
                &[("name", "svc")],
                move |_| quota_us,
            ),
            gauge(
                "app",
                "container_spec_cpu_period",
                &[("name", "svc")],
                |_| 100_000.0,
            ),
        ]
    };
    let a = attribute_app(svc(150_000.0));
    let p = find(&a, "CPU (process)");
    assert_eq!(p.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(p.state.starts_with("93% of the 1.5 cores"), "{}", p.state);
    assert!(
        p.evidence.contains("process_cpu_seconds_total") && p.evidence.contains("cgroup CPU quota"),
        "{}",
        p.evidence
    );
    // No quota (-1): the 4 CPUs it may use, 35% busy.
    let a = attribute_app(svc(-1.0));
    let p = find(&a, "CPU (process)");
    assert_eq!(p.verdict, Verdict::No, "{:#?}", a.components);
    assert!(p.state.starts_with("35% of the 4 cores"), "{}", p.state);
}

#[test]
fn the_gauge_alone_is_scaled_by_the_hosts_cores() {
    // Only `process_cpu_usage` (an older Micrometer), pinned to 1 of 2 cores and
    // full on it: node_exporter on the same host says how many CPUs the share is of.
    let mut s = vec![
        gauge("app", "system_cpu_count", &[], |_| 1.0),
        gauge("app", "process_cpu_usage", &[], |t| {
            if hot(t) {
                0.49
            } else {
                0.2
            }
        }),
    ];
    for cpu in ["0", "1"] {
        s.push(counter(
            "node",
            "node_cpu_seconds_total",
            &[("cpu", cpu), ("mode", "idle")],
            |_| 0.5,
        ));
    }
    let (w, b) = windows_fixed();
    let eps = [
        ("node", "http://127.0.0.1:9100/metrics"),
        ("app", "http://127.0.0.1:8080/actuator/prometheus"),
    ];
    let a = attribute(
        &obs(&eps, s.clone()),
        w.clone(),
        b.clone(),
        true,
        Vec::new(),
    );
    let p = find(&a, "CPU (process)");
    assert_eq!(p.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(
        p.evidence
            .contains("process_cpu_usage × the host's 2 cores"),
        "{}",
        p.evidence
    );
    // Without node_exporter the host is unknown: taken as the CPUs it may use,
    // and the evidence says what that assumes.
    let a = attribute_app(s.into_iter().filter(|x| x.endpoint == "app").collect());
    let p = find(&a, "CPU (process)");
    assert_eq!(p.verdict, Verdict::No, "{:#?}", a.components);
    assert!(
        p.evidence.contains("if the process may use fewer"),
        "{}",
        p.evidence
    );
}

/// node_exporter on a 2-CPU machine, `busy_cold` and `busy_hot` busy.
fn node_cpu(busy_cold: f64, busy_hot: f64) -> Vec<ObservedSeries> {
    ["0", "1"]
        .iter()
        .map(|cpu| {
            counter(
                "node",
                "node_cpu_seconds_total",
                &[("cpu", cpu), ("mode", "idle")],
                move |t| 1.0 - if hot(t) { busy_hot } else { busy_cold },
            )
        })
        .collect()
}

fn attribute_node_and_app(series: Vec<ObservedSeries>) -> Attribution {
    let (w, b) = windows_fixed();
    attribute(
        &obs(
            &[
                ("node", "http://127.0.0.1:9100/metrics"),
                ("app", "http://127.0.0.1:8080/metrics"),
            ],
            series,
        ),
        w,
        b,
        true,
        Vec::new(),
    )
}

#[test]
fn a_machine_busy_from_the_first_second_is_not_the_limit_beside_what_changed() {
    // A low-priority job keeps the CPUs at 99% all along; the DB pool fills
    // only at saturation.
    let mut s = node_cpu(0.99, 0.99);
    s.extend(spring(true));
    let a = attribute_node_and_app(s);
    let m = find(&a, "CPU (machine)");
    assert_eq!(m.verdict, Verdict::BusyThroughout, "{:#?}", a.components);
    assert_eq!(m.baseline.as_deref(), Some("99% busy"));
    assert!(m.evidence.contains("not what changed"), "{}", m.evidence);
    assert_eq!(a.limit.as_deref(), Some("DB pool HikariPool-1 (app)"));
    // Ranked after the limit, before the consequences.
    assert_eq!(a.components[0].component, "DB pool HikariPool-1");
    assert_eq!(a.components[1].component, "CPU (machine)");

    // The same machine idle at low load: it changed, so it is a limit. The
    // service, below the CPU it may use on a host now 99% busy, is not called
    // contended: its requests waited for DB connections, not for CPU.
    let mut s = node_cpu(0.2, 0.99);
    s.extend(spring(true));
    let a = attribute_node_and_app(s);
    assert_eq!(find(&a, "CPU (machine)").verdict, Verdict::Yes);
    assert_eq!(
        a.limit.as_deref(),
        Some("CPU (machine) (node), DB pool HikariPool-1 (app)")
    );
    let p = find(&a, "CPU (process)");
    assert_eq!(p.verdict, Verdict::No, "{:#?}", a.components);
    assert!(
        p.evidence
            .contains("waited for DB pool HikariPool-1's connections"),
        "{}",
        p.evidence
    );
    assert_eq!(
        find(&a, "Worker pool `http`").verdict,
        Verdict::Consequence,
        "{:#?}",
        a.components
    );
}

/// Issue #28: neighbours take part of the one core a JVM may use. It gets 0.71 of
/// it while its host's CPUs are 100% busy and all its workers are busy with a
/// queue. That is not "29% of the CPU left idle" with the workers to blame: the
/// process is contended and CPU is its limit. The same JVM on a host at 60% had
/// CPU to spare: then the workers are the limit.
#[test]
fn a_process_below_its_cpu_on_a_full_host_is_contended_not_idle() {
    let mut s = node_cpu(0.3, 1.0);
    s.extend(pinned_jvm(1.0, 2.0, 0.71));
    let a = attribute_node_and_app(s);
    let p = find(&a, "CPU (contended)");
    assert_eq!(p.verdict, Verdict::Yes, "{:#?}", a.components);
    assert_eq!(p.kind, Kind::ContendedCpu);
    assert!(
        p.state.starts_with("71% of the 1 core it may use") && p.state.ends_with(", contended"),
        "{}",
        p.state
    );
    assert!(
        p.evidence.contains("the host's CPUs were 100% busy")
            && p.evidence.contains("CPU is still its limit"),
        "{}",
        p.evidence
    );
    assert!(!p.evidence.contains("left idle"), "{}", p.evidence);
    let wp = find(&a, "Worker pool `workers`");
    assert_eq!(wp.verdict, Verdict::Consequence, "{:#?}", a.components);
    assert!(
        wp.evidence.contains("waits on CPU (contended)"),
        "{}",
        wp.evidence
    );
    assert_eq!(
        a.limit.as_deref(),
        Some("CPU (machine) (node), CPU (contended) (app)")
    );

    // Must not fire: the host at 90% (a CPU free now and then: below 95%), nor
    // at 60%, so the JVM's idle 29% was really idle.
    let mut s = node_cpu(0.3, 0.9);
    s.extend(pinned_jvm(1.0, 2.0, 0.71));
    let a = attribute_node_and_app(s);
    assert_eq!(
        find(&a, "CPU (process)").verdict,
        Verdict::No,
        "{:#?}",
        a.components
    );
    let mut s = node_cpu(0.3, 0.6);
    s.extend(pinned_jvm(1.0, 2.0, 0.71));
    let a = attribute_node_and_app(s);
    let p = find(&a, "CPU (process)");
    assert_eq!(p.verdict, Verdict::No, "{:#?}", a.components);
    assert!(
        p.evidence
            .starts_with("29% of the CPU it may use left idle"),
        "{}",
        p.evidence
    );
    assert_eq!(find(&a, "Worker pool `workers`").verdict, Verdict::Yes);
    assert_eq!(a.limit.as_deref(), Some("Worker pool `workers` (app)"));

    // The kernel's CPU pressure says the same without node_exporter's busy share:
    // the service's tasks waited for a CPU 40% of the time.
    let mut s = pinned_jvm(1.0, 2.0, 0.71);
    s.push(counter(
        "app",
        "node_pressure_cpu_waiting_seconds_total",
        &[],
        |t| if hot(t) { 0.4 } else { 0.01 },
    ));
    let a = attribute_app(s);
    let p = find(&a, "CPU (contended)");
    assert_eq!(p.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(
        p.evidence
            .contains("tasks waited for a CPU 40% of the time"),
        "{}",
        p.evidence
    );
    // As contended at low load, when the service kept up: busy throughout.
    let mut s = node_cpu(0.99, 1.0);
    s.extend(pinned_jvm(1.0, 2.0, 0.71));
    let a = attribute_node_and_app(s);
    assert_eq!(
        find(&a, "CPU (contended)").verdict,
        Verdict::BusyThroughout,
        "{:#?}",
        a.components
    );
    // A host as busy at low load (a low-priority job beside the service) says
    // nothing of what the workers wait on: they stay the limit, the CPU is not
    // promoted for them.
    assert_eq!(find(&a, "Worker pool `workers`").verdict, Verdict::Yes);
    assert_eq!(a.limit.as_deref(), Some("Worker pool `workers` (app)"));
}

#[test]
fn busy_throughout_and_nothing_else_is_said_honestly() {
    // Only the machine was saturated, and it was so at low load too.
    let a = attribute_node_and_app(node_cpu(0.97, 0.99));
    let m = find(&a, "CPU (machine)");
    assert_eq!(m.verdict, Verdict::BusyThroughout, "{:#?}", a.components);
    assert!(
        m.evidence.contains("nothing else observed changed"),
        "{}",
        m.evidence
    );
    let limit = a.limit.as_deref().unwrap_or_default();
    assert!(
        limit.starts_with("CPU (machine) (node): busy throughout")
            && limit.contains("nothing else observed saturated"),
        "{limit}"
    );
    // Without a low-load window there is nothing to compare with: a plain limit.
    let (w, _) = windows_fixed();
    let a = attribute(
        &obs(&[("node", "u")], node_cpu(0.97, 0.99)),
        w,
        None,
        true,
        Vec::new(),
    );
    assert_eq!(find(&a, "CPU (machine)").verdict, Verdict::Yes);
    assert_eq!(a.limit.as_deref(), Some("CPU (machine) (node)"));
}

#[test]
fn a_pool_as_backed_up_at_low_load_is_busy_throughout_unless_its_queue_grew() {
    // Four connections, all in use with `cold` waiting at low load and four
    // waiting at saturation; nothing else saturated.
    let pool = |cold: f64| {
        let lbl: &[(&str, &str)] = &[("pool", "HikariPool-1")];
        vec![
            gauge("app", "hikaricp_connections_max", lbl, |_| 4.0),
            gauge("app", "hikaricp_connections_active", lbl, |_| 4.0),
            gauge("app", "hikaricp_connections_pending", lbl, move |t| {
                if hot(t) {
                    4.0
                } else {
                    cold
                }
            }),
        ]
    };
    let a = attribute_app(pool(4.0));
    assert_eq!(
        find(&a, "DB pool").verdict,
        Verdict::BusyThroughout,
        "{:#?}",
        a.components
    );
    // One waiting at low load, four at saturation: the queue grew, what changed.
    let a = attribute_app(pool(1.0));
    assert_eq!(
        find(&a, "DB pool").verdict,
        Verdict::Yes,
        "{:#?}",
        a.components
    );
    assert_eq!(a.limit.as_deref(), Some("DB pool HikariPool-1 (app)"));
}

/// Four workers on two connections, as the demo target: the pool has both in use
/// and two workers waiting at low load and at saturation (`pool_ep` is where its
/// metrics come from); the workers are all busy at both, with `queued_cold`
/// requests queued for them at low load and 30 at saturation.
fn workers_on_a_full_pool(pool_ep: &'static str, queued_cold: f64) -> Vec<ObservedSeries> {
    let lbl: &[(&str, &str)] = &[("pool", "HikariPool-1")];
    let http: &[(&str, &str)] = &[("name", "http")];
    vec![
        gauge(pool_ep, "hikaricp_connections_max", lbl, |_| 2.0),
        gauge(pool_ep, "hikaricp_connections_active", lbl, |_| 2.0),
        gauge(pool_ep, "hikaricp_connections_pending", lbl, |_| 2.0),
        gauge("app", "executor_pool_max_threads", http, |_| 4.0),
        gauge("app", "executor_active_threads", http, |_| 4.0),
        gauge("app", "executor_queued_tasks", http, move |t| {
            if hot(t) {
                30.0
            } else {
                queued_cold
            }
        }),
    ]
}

fn attribute_on(endpoints: &[(&str, &str)], series: Vec<ObservedSeries>) -> Attribution {
    let (w, b) = windows_fixed();
    attribute(&obs(endpoints, series), w, b, true, Vec::new())
}

#[test]
fn a_pool_full_throughout_is_the_limit_when_the_threads_waiting_on_it_fill_up() {
    // The workers' queue grew (0 → 30) while the pool they wait on was as full
    // as it can get at both loads: the pool is what limits, the workers wait.
    let a = attribute_app(workers_on_a_full_pool("app", 0.0));
    let pool = find(&a, "DB pool");
    assert_eq!(pool.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(
        pool.evidence.contains("as full at low load"),
        "{}",
        pool.evidence
    );
    let wp = find(&a, "Worker pool");
    assert_eq!(wp.verdict, Verdict::Consequence, "{:#?}", a.components);
    assert!(wp.evidence.contains("waits on DB pool"), "{}", wp.evidence);
    assert_eq!(a.limit.as_deref(), Some("DB pool HikariPool-1 (app)"));
}

#[test]
fn a_cpu_used_up_at_both_loads_is_the_limit_when_its_threads_fill_up() {
    // A process on its one core at 97% at low load and at saturation: busy
    // throughout by its own numbers; its four workers were all busy at both, and
    // their queue grew (0 → 12). They queue for the CPU: it is the limit.
    let http: &[(&str, &str)] = &[("name", "http")];
    let a = attribute_app(vec![
        gauge("app", "system_cpu_count", &[], |_| 1.0),
        counter("app", "process_cpu_seconds_total", &[], |_| 0.97),
        gauge("app", "executor_pool_max_threads", http, |_| 4.0),
        gauge("app", "executor_active_threads", http, |_| 4.0),
        gauge("app", "executor_queued_tasks", http, |t| {
            if hot(t) {
                12.0
            } else {
                0.0
            }
        }),
    ]);
    let cpu = find(&a, "CPU (process)");
    assert_eq!(cpu.verdict, Verdict::Yes, "{:#?}", a.components);
    assert!(
        cpu.evidence.contains("as full at low load"),
        "{}",
        cpu.evidence
    );
    let wp = find(&a, "Worker pool");
    assert_eq!(wp.verdict, Verdict::Consequence, "{:#?}", a.components);
    assert!(
        wp.evidence.contains("waits on CPU (process)"),
        "{}",
        wp.evidence
    );
    assert_eq!(a.limit.as_deref(), Some("CPU (process) (app)"));
}

#[test]
fn a_full_pool_of_another_service_does_not_explain_these_threads() {
    // The same numbers, but the pool is another service's (`db-svc`): the
    // workers of `app` do not wait on it, so their queue is the limit.
    let a = attribute_on(
        &[("app", "u1"), ("db-svc", "u2")],
        workers_on_a_full_pool("db-svc", 0.0),
    );
    assert_eq!(
        find(&a, "Worker pool").verdict,
        Verdict::Yes,
        "{:#?}",
        a.components
    );
    assert_eq!(find(&a, "DB pool").verdict, Verdict::BusyThroughout);
    assert_eq!(a.limit.as_deref(), Some("Worker pool `http` (app)"));
}

#[test]
fn a_pool_and_threads_as_full_at_low_load_name_no_change() {
    // The workers' queue was 30 at low load too: nothing changed, nothing is
    // named the limit by change, and the pool is not promoted.
    let a = attribute_app(workers_on_a_full_pool("app", 30.0));
    assert!(
        a.components.iter().all(|c| c.verdict != Verdict::Yes),
        "{:#?}",
        a.components
    );
    assert_eq!(find(&a, "DB pool").verdict, Verdict::BusyThroughout);
    let limit = a.limit.as_deref().unwrap_or_default();
    assert!(limit.contains("busy throughout"), "{limit}");
}

#[test]
fn idle_and_unbounded_pools_are_one_short_line() {
    let unbounded = |busy: f64| {
        let lbl: &[(&str, &str)] = &[("name", "applicationTaskExecutor")];
        vec![
            gauge("app", "executor_pool_max_threads", lbl, |_| 2147483647.0),
            gauge("app", "executor_active_threads", lbl, move |_| busy),
            gauge("app", "executor_queued_tasks", lbl, |_| 0.0),
        ]
    };
    let mut s = spring(false);
    s.extend(unbounded(0.0));
    let a = attribute_app(s);
    assert!(
        !a.components
            .iter()
            .any(|c| c.component.contains("`applicationTaskExecutor`")),
        "{:#?}",
        a.components
    );
    let idle = find(&a, "Idle pools");
    assert_eq!(idle.verdict, Verdict::No);
    assert_eq!(
        idle.state,
        "Worker pool `applicationTaskExecutor` (unbounded)"
    );
    // The busy pool keeps its row and stays the limit.
    assert_eq!(a.limit.as_deref(), Some("Worker pool `http` (app)"));

    // An unbounded executor in use is a row of its own, never "full", and shows
    // no absurd maximum.
    let mut s = spring(false);
    s.extend(unbounded(30.0));
    let a = attribute_app(s);
    let ex = find(&a, "Worker pool `applicationTaskExecutor`");
    assert_eq!(ex.verdict, Verdict::No, "{:#?}", a.components);
    assert_eq!(ex.state, "30 busy (unbounded), 0 queued (max 0)");
    assert_eq!(ex.utilisation, None);
    assert!(!a.components.iter().any(|c| c.component == "Idle pools"));
}

/// A vLLM-style server whose batch holds 8: `concurrency` streams at high load
/// (2 at low load); past 8 the rest wait. Each running request holds 600 tokens
/// of a cache of 8 × 2048.
fn vllm(concurrency: f64) -> Vec<ObservedSeries> {
    let lbl: &[(&str, &str)] = &[("model_name", "llama")];
    let running = move |t: f64| if hot(t) { concurrency.min(8.0) } else { 2.0 };
    vec![
        gauge("llm", "system_cpu_count", &[], |_| 4.0),
        gauge("llm", "process_cpu_usage", &[], |_| 0.05),
        gauge("llm", "vllm:num_requests_running", lbl, running),
        gauge("llm", "vllm:num_requests_waiting", lbl, move |t| {
            (if hot(t) { concurrency } else { 2.0 } - 8.0).max(0.0)
        }),
        gauge("llm", "vllm:kv_cache_usage_perc", lbl, move |t| {
            running(t) * 600.0 / (8.0 * 2048.0)
        }),
    ]
}

fn attribute_llm(series: Vec<ObservedSeries>) -> Attribution {
    let (w, b) = windows_fixed();
    attribute(
        &obs(&[("llm", "http://127.0.0.1:8000/metrics")], series),
        w,
        b,
        true,
        Vec::new(),
    )
}

#[test]
fn an_llm_batch_with_requests_waiting_is_the_limit_in_the_users_words() {
    // 20 streams against a batch of 8: 8 run, 12 wait.
    let a = attribute_llm(vllm(20.0));
    let b = find(&a, "LLM batch `llama`");
    assert_eq!(b.verdict, Verdict::Yes, "{:#?}", a.components);
    assert_eq!(b.kind, Kind::Pool);
    // 8 × 600 of 16384 tokens: 29%.
    assert_eq!(
        b.evidence,
        "LLM batch full: 8 running, 12 waiting; KV cache 29%"
    );
    assert_eq!(b.state, "8 running, 12 waiting; KV cache 29%");
    assert_eq!(b.baseline.as_deref(), Some("2 running, 0 waiting"));
    assert_eq!(a.limit.as_deref(), Some("LLM batch `llama` (llm)"));
}

#[test]
fn an_llm_batch_below_its_limit_names_nothing() {
    // 6 streams against a batch of 8: nobody waits.
    let a = attribute_llm(vllm(6.0));
    let b = find(&a, "LLM batch `llama`");
    assert_eq!(b.verdict, Verdict::No, "{:#?}", a.components);
    assert_eq!(
        b.evidence,
        "no request waited for a place in the batch (at most 6 running)"
    );
    assert!(
        !a.components.iter().any(|c| c.verdict == Verdict::Yes),
        "{:#?}",
        a.components
    );
    // The older cache name is read the same way.
    let older: Vec<ObservedSeries> = vllm(20.0)
        .into_iter()
        .map(|mut s| {
            if s.name == "vllm:kv_cache_usage_perc" {
                s.name = "vllm:gpu_cache_usage_perc".into();
            }
            s
        })
        .collect();
    let a = attribute_llm(older);
    assert!(
        find(&a, "LLM batch").evidence.ends_with("KV cache 29%"),
        "{:#?}",
        a.components
    );
    assert!(wanted("vllm:num_requests_waiting") && wanted("vllm:gpu_cache_usage_perc"));
}

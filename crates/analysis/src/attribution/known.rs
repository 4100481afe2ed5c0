//! The metric families pado knows by name, and what "saturated" means for each.
//!
//! Names follow Micrometer (Spring Boot actuator: `process_cpu_usage`,
//! `hikaricp_connections_*`, `tomcat_threads_*`, `executor_*`, `jvm_*`), the
//! Prometheus client conventions (`process_cpu_seconds_total`,
//! `process_open_fds`), node_exporter (`node_cpu_seconds_total`, `node_load1`,
//! `node_memory_*`), mysqld_exporter (`mysql_global_status_*`), postgres_exporter
//! (`pg_*`), redis_exporter (`redis_*`) and nginx-prometheus-exporter
//! (`nginx_*`). Thresholds are the ones an engineer applies reading Grafana:
//! a pool or thread set is saturated when it is at its maximum with work
//! waiting; a CPU at 85% or more of its cores; GC over 10% of wall time; a heap
//! or memory 90% full.

use std::collections::BTreeMap;

use pado_metrics::{Observations, ObservedSeries};

use super::window_math::{level, rate, share_where, sum_levels, sum_rates, Level, Window};
use super::{Component, Kind, Verdict};

/// CPU utilisation at or above which a CPU is saturated.
pub const CPU_SATURATED: f64 = 0.85;
/// Share of wall time in GC pauses at or above which GC is the bottleneck.
pub const GC_SATURATED: f64 = 0.10;
/// Fill level of heap, memory, connections or descriptors that counts as full.
pub const FULL: f64 = 0.90;
/// Share of the window's scrapes a pool or thread set must spend at its
/// maximum to count as full even when its mean is lower (a window that starts
/// on the ramp, before the plateau).
pub const AT_MAX_SHARE: f64 = 0.5;
/// Mean waiting count at or above which a pool or queue is backed up.
pub const BACKED_UP: f64 = 0.5;

const PREFIXES: [&str; 13] = [
    "process_",
    "system_",
    "node_cpu_seconds_total",
    "node_load",
    "node_memory_",
    "node_vmstat_psw",
    "jvm_",
    "hikaricp_",
    "tomcat_threads_",
    "jetty_threads_",
    "executor_",
    "mysql_",
    "redis_",
];
const PREFIXES2: [&str; 3] = ["nginx_", "pg_", "pado_target_"];

/// Names this module reads (and interprets: the generic rules leave them alone).
pub fn wanted(name: &str) -> bool {
    PREFIXES
        .iter()
        .chain(PREFIXES2.iter())
        .any(|p| name.starts_with(p))
}

struct Ep<'a> {
    name: &'a str,
    series: Vec<&'a ObservedSeries>,
}

impl<'a> Ep<'a> {
    fn named(&self, n: &str) -> impl Iterator<Item = &'a ObservedSeries> + '_ {
        let n = n.to_string();
        self.series.iter().copied().filter(move |s| s.name == n)
    }
    fn one(&self, n: &str) -> Option<&'a ObservedSeries> {
        self.named(n).next()
    }
    fn has(&self, n: &str) -> bool {
        self.one(n).is_some()
    }
    /// Series of `n` grouped by the value of `label`.
    fn by_label(&self, n: &str, label: &str) -> BTreeMap<String, &'a ObservedSeries> {
        self.named(n)
            .map(|s| (s.label(label).to_string(), s))
            .collect()
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn num(x: f64) -> String {
    if x.abs() >= 100.0 || (x - x.round()).abs() < 0.05 && x.abs() >= 1.0 || x == 0.0 {
        format!("{:.0}", x)
    } else if x.abs() < 1.0 {
        format!("{:.2}", x)
    } else {
        format!("{:.1}", x)
    }
}

/// ` (max N)` when the peak says more than the mean.
fn peak(l: &Level) -> String {
    if l.max > l.mean + 0.5 {
        format!(" (max {})", num(l.max))
    } else {
        String::new()
    }
}

fn bytes(x: f64) -> String {
    const GI: f64 = 1024.0 * 1024.0 * 1024.0;
    if x >= GI {
        format!("{:.1} GiB", x / GI)
    } else {
        format!("{:.0} MiB", x / (1024.0 * 1024.0))
    }
}

fn row(component: String, kind: Kind, ep: &str) -> Component {
    Component {
        component,
        kind,
        endpoint: ep.to_string(),
        state: String::new(),
        baseline: None,
        verdict: Verdict::No,
        evidence: String::new(),
        utilisation: None,
    }
}

/// Every component the known families reveal.
pub fn components(obs: &Observations, w: &Window, base: Option<&Window>) -> Vec<Component> {
    let mut out = Vec::new();
    // Cores per host, for process CPU seconds without a core count of their own.
    let mut host_cores: BTreeMap<String, f64> = BTreeMap::new();
    let eps: Vec<Ep> = obs
        .endpoints
        .iter()
        .map(|e| Ep {
            name: &e.name,
            series: obs.series.iter().filter(|s| s.endpoint == e.name).collect(),
        })
        .collect();
    for (e, log) in eps.iter().zip(&obs.endpoints) {
        if let Some(n) = node_cpus(e) {
            host_cores.insert(host_of(&log.url), n as f64);
        }
    }
    for (e, log) in eps.iter().zip(&obs.endpoints) {
        let cores = e
            .one("system_cpu_count")
            .and_then(|s| level(s, w))
            .map(|l| l.last)
            .or_else(|| host_cores.get(&host_of(&log.url)).copied());
        out.extend(process_cpu(e, w, base, cores));
        out.extend(machine_cpu(e, w, base));
        out.extend(node_memory(e, w, base));
        out.extend(jvm_heap(e, w, base));
        out.extend(jvm_gc(e, w, base));
        out.extend(hikari(e, w, base));
        out.extend(threads(e, w, base));
        out.extend(mysql(e, w, base));
        out.extend(postgres(e, w, base));
        out.extend(redis(e, w, base));
        out.extend(nginx(e, w, base));
        out.extend(fds(e, w));
    }
    out
}

fn host_of(url: &str) -> String {
    url.split("://")
        .nth(1)
        .and_then(|r| r.split(['/', ':']).next())
        .unwrap_or("")
        .to_string()
}

fn node_cpus(e: &Ep) -> Option<usize> {
    let n = e
        .named("node_cpu_seconds_total")
        .filter(|s| s.label("mode") == "idle")
        .count();
    (n > 0).then_some(n)
}

fn process_cpu(e: &Ep, w: &Window, base: Option<&Window>, cores: Option<f64>) -> Option<Component> {
    // Micrometer's gauge is already a share of all cores.
    let (util, busy_cores, base_util) = if let Some(g) = e.one("process_cpu_usage") {
        let l = level(g, w)?;
        let b = base.and_then(|b| level(g, b)).map(|l| l.mean);
        (Some(l.mean), cores.map(|c| l.mean * c), b)
    } else {
        let c = e.one("process_cpu_seconds_total")?;
        let r = rate(c, w)?;
        let b = base.and_then(|b| rate(c, b));
        (
            cores.map(|n| r / n),
            Some(r),
            cores.and_then(|n| b.map(|b| b / n)),
        )
    };
    let mut c = row("CPU (process)".into(), Kind::ProcessCpu, e.name);
    match (util, cores) {
        (Some(u), Some(n)) => {
            c.state = format!("{} of {} cores ({} cores busy)", pct(u), num(n), num(u * n));
            c.utilisation = Some(u);
        }
        (Some(u), None) => {
            c.state = format!("{} of all cores", pct(u));
            c.utilisation = Some(u);
        }
        (None, _) => {
            c.state = format!("{} cores busy", num(busy_cores.unwrap_or(0.0)));
            c.verdict = Verdict::Unknown;
            c.evidence = "core count unknown: scrape node_exporter on the same host, or expose system_cpu_count".into();
            return Some(c);
        }
    }
    c.baseline = base_util.map(pct);
    let u = c.utilisation.unwrap_or(0.0);
    if u >= CPU_SATURATED {
        c.verdict = Verdict::Yes;
        c.evidence = format!("the process used {} of the CPU it can get", pct(u));
    } else {
        c.evidence = format!("{} of the cores left idle", pct(1.0 - u));
    }
    Some(c)
}

fn machine_cpu(e: &Ep, w: &Window, base: Option<&Window>) -> Option<Component> {
    let mut c = row("CPU (machine)".into(), Kind::MachineCpu, e.name);
    let (util, ncpu, iowait, base_util) = if let Some(n) = node_cpus(e) {
        let idle: Vec<_> = e
            .named("node_cpu_seconds_total")
            .filter(|s| s.label("mode") == "idle")
            .collect();
        let io: Vec<_> = e
            .named("node_cpu_seconds_total")
            .filter(|s| s.label("mode") == "iowait")
            .collect();
        let idle_r = sum_rates(idle.iter().copied(), w)?;
        let io_r = sum_rates(io.iter().copied(), w).unwrap_or(0.0);
        let b = base
            .and_then(|b| sum_rates(idle.iter().copied(), b))
            .map(|r| 1.0 - r / n as f64);
        (
            (1.0 - (idle_r + io_r) / n as f64).clamp(0.0, 1.0),
            Some(n as f64),
            io_r / n as f64,
            b,
        )
    } else if let Some(g) = e.one("system_cpu_usage") {
        let l = level(g, w)?;
        let n = e
            .one("system_cpu_count")
            .and_then(|s| level(s, w))
            .map(|l| l.last);
        (
            l.mean,
            n,
            0.0,
            base.and_then(|b| level(g, b)).map(|l| l.mean),
        )
    } else {
        return None;
    };
    let load = e
        .one("node_load1")
        .or_else(|| e.one("system_load_average_1m"))
        .and_then(|s| level(s, w));
    c.utilisation = Some(util);
    c.state = format!("{} busy", pct(util));
    if let Some(n) = ncpu {
        c.state.push_str(&format!(" of {} cores", num(n)));
    }
    if iowait >= 0.05 {
        c.state.push_str(&format!(", iowait {}", pct(iowait)));
    }
    let mut overloaded = false;
    if let Some(l) = load {
        c.state.push_str(&format!(", load1 {}", num(l.max)));
        if let Some(n) = ncpu {
            c.state.push_str(&format!(" ({}× cores)", num(l.max / n)));
            overloaded = l.max >= 1.5 * n;
        }
    }
    c.baseline = base_util.map(|u| format!("{} busy", pct(u)));
    if util >= CPU_SATURATED {
        c.verdict = Verdict::Yes;
        c.evidence = format!("the machine's CPUs were {} busy", pct(util));
    } else if iowait >= 0.2 {
        c.verdict = Verdict::Yes;
        c.evidence = format!("CPUs waited on disk {} of the time", pct(iowait));
    } else if overloaded {
        c.verdict = Verdict::Yes;
        c.evidence = "the run queue was 1.5× the core count or longer".into();
    } else {
        c.evidence = format!("{} idle", pct(1.0 - util - iowait));
    }
    Some(c)
}

fn node_memory(e: &Ep, w: &Window, base: Option<&Window>) -> Option<Component> {
    let avail = level(e.one("node_memory_MemAvailable_bytes")?, w)?;
    let total = level(e.one("node_memory_MemTotal_bytes")?, w)?.last;
    if total <= 0.0 {
        return None;
    }
    let mut c = row("Memory (machine)".into(), Kind::Memory, e.name);
    let used = 1.0 - avail.mean / total;
    let worst = 1.0 - avail.max.min(avail.first.min(avail.last)) / total;
    let swap = sum_rates(
        e.series
            .iter()
            .copied()
            .filter(|s| s.name == "node_vmstat_pswpin" || s.name == "node_vmstat_pswpout"),
        w,
    )
    .unwrap_or(0.0);
    c.utilisation = Some(used);
    c.state = format!("{} used of {}", pct(used), bytes(total));
    if swap > 0.0 {
        c.state
            .push_str(&format!(", swapping {} pages/s", num(swap)));
    }
    c.baseline = base
        .and_then(|b| level(e.one("node_memory_MemAvailable_bytes")?, b))
        .map(|l| format!("{} used", pct(1.0 - l.mean / total)));
    if used.max(worst) >= FULL || swap >= 100.0 {
        c.verdict = Verdict::Yes;
        c.evidence = if swap >= 100.0 {
            "the machine was swapping".into()
        } else {
            format!("less than {} of memory available", pct(1.0 - FULL))
        };
    } else {
        c.evidence = format!("{} available", bytes(avail.mean));
    }
    Some(c)
}

fn jvm_heap(e: &Ep, w: &Window, base: Option<&Window>) -> Option<Component> {
    let heap = |n: &str| {
        e.named(n)
            .filter(|s| s.label("area") == "heap")
            .collect::<Vec<_>>()
    };
    let used_s = heap("jvm_memory_used_bytes");
    if used_s.is_empty() {
        return None;
    }
    let used = sum_levels(used_s.iter().copied(), w)?;
    // Pools without a limit report -1.
    let max: f64 = heap("jvm_memory_max_bytes")
        .iter()
        .filter_map(|s| level(s, w))
        .map(|l| l.last)
        .filter(|v| *v > 0.0)
        .sum();
    let mut c = row("JVM heap".into(), Kind::Heap, e.name);
    c.baseline = base
        .and_then(|b| sum_levels(used_s.iter().copied(), b))
        .map(|l| bytes(l.mean));
    if max <= 0.0 {
        c.state = format!("{} used (no limit reported)", bytes(used.mean));
        c.evidence = "no heap maximum to compare with".into();
        c.verdict = Verdict::Unknown;
        return Some(c);
    }
    let u = used.mean / max;
    c.utilisation = Some(u);
    c.state = format!(
        "{} of {} ({}), peak {}",
        bytes(used.mean),
        bytes(max),
        pct(u),
        pct(used.max / max)
    );
    if u >= FULL {
        c.verdict = Verdict::Yes;
        c.evidence = "the heap stayed nearly full".into();
    } else {
        c.evidence = format!("{} of the heap free on average", pct(1.0 - u));
    }
    Some(c)
}

fn jvm_gc(e: &Ep, w: &Window, base: Option<&Window>) -> Option<Component> {
    let sums: Vec<_> = e.named("jvm_gc_pause_seconds_sum").collect();
    if sums.is_empty() {
        return None;
    }
    let share = sum_rates(sums.iter().copied(), w)?;
    let longest = e
        .named("jvm_gc_pause_seconds_max")
        .filter_map(|s| level(s, w))
        .map(|l| l.max)
        .fold(0.0, f64::max);
    let mut c = row("JVM GC".into(), Kind::Gc, e.name);
    c.utilisation = Some(share);
    c.state = format!("{:.1}% of time in pauses", share * 100.0);
    if longest > 0.0 {
        c.state
            .push_str(&format!(", longest {} ms", num(longest * 1000.0)));
    }
    c.baseline = base
        .and_then(|b| sum_rates(sums.iter().copied(), b))
        .map(|s| format!("{:.1}% of time", s * 100.0));
    if share >= GC_SATURATED {
        c.verdict = Verdict::Yes;
        c.evidence = format!("GC pauses took {:.0}% of wall time", share * 100.0);
    } else {
        c.evidence = "GC pauses were a small share of the time".into();
    }
    Some(c)
}

fn hikari(e: &Ep, w: &Window, base: Option<&Window>) -> Vec<Component> {
    let mut out = Vec::new();
    let max = e.by_label("hikaricp_connections_max", "pool");
    let pending = e.by_label("hikaricp_connections_pending", "pool");
    let acq_sum = e.by_label("hikaricp_connections_acquire_seconds_sum", "pool");
    let acq_cnt = e.by_label("hikaricp_connections_acquire_seconds_count", "pool");
    let timeouts = e.by_label("hikaricp_connections_timeout_total", "pool");
    for (pool, active) in e.by_label("hikaricp_connections_active", "pool") {
        let Some(a) = level(active, w) else { continue };
        let m = max.get(&pool).and_then(|s| level(s, w)).map(|l| l.last);
        let p = pending.get(&pool).and_then(|s| level(s, w));
        let acquire_ms = match (acq_sum.get(&pool), acq_cnt.get(&pool)) {
            (Some(s), Some(n)) => match (rate(s, w), rate(n, w)) {
                (Some(s), Some(n)) if n > 0.0 => Some(s / n * 1000.0),
                _ => None,
            },
            _ => None,
        };
        let timed_out = timeouts.get(&pool).and_then(|s| rate(s, w)).unwrap_or(0.0);
        let name = if pool.is_empty() {
            "DB pool".to_string()
        } else {
            format!("DB pool {pool}")
        };
        let mut c = row(name, Kind::Pool, e.name);
        let mut state = match m {
            Some(m) if m > 0.0 => {
                c.utilisation = Some(a.mean / m);
                format!("{}/{} active", num(a.mean), num(m))
            }
            _ => format!("{} active", num(a.mean)),
        };
        if let Some(p) = p {
            state.push_str(&format!(", {} pending{}", num(p.mean), peak(&p)));
        }
        if let Some(ms) = acquire_ms {
            state.push_str(&format!(", acquire {} ms", num(ms)));
        }
        if timed_out > 0.0 {
            state.push_str(&format!(", {} timeouts/s", num(timed_out)));
        }
        c.state = state;
        c.baseline = base.and_then(|b| {
            let a = level(active, b)?;
            let p = pending
                .get(&pool)
                .and_then(|s| level(s, b))
                .map_or(0.0, |l| l.mean);
            Some(format!("{} active, {} pending", num(a.mean), num(p)))
        });
        let full = at_capacity(active, &a, m, w);
        let waiting = p.is_some_and(|p| p.mean >= BACKED_UP);
        if timed_out > 0.0 || (full && waiting) {
            c.verdict = Verdict::Yes;
            c.evidence = if timed_out > 0.0 {
                "requests timed out waiting for a connection".into()
            } else {
                "every connection in use with requests waiting for one".into()
            };
        } else if waiting {
            c.verdict = Verdict::Yes;
            c.evidence = "requests waited for connections".into();
        } else {
            c.evidence = match m {
                Some(m) => format!(
                    "{} of {} connections idle on average",
                    num((m - a.mean).max(0.0)),
                    num(m)
                ),
                None => "nobody waited for a connection".into(),
            };
        }
        out.push(c);
    }
    out
}

/// Whether a pool or thread set (`level` of series `s` over `w`) was full: its
/// mean at [`FULL`] of `max`, or at `max` in [`AT_MAX_SHARE`] of the scrapes.
fn at_capacity(s: &ObservedSeries, level: &Level, max: Option<f64>, w: &Window) -> bool {
    max.is_some_and(|m| {
        m > 0.0
            && (level.mean >= FULL * m
                || share_where(s, w, |v| v >= m).unwrap_or(0.0) >= AT_MAX_SHARE)
    })
}

/// Names of one thread-pool family: busy and max gauges, an optional queue gauge,
/// the label that tells pools apart, and the name shown.
struct ThreadFamily {
    busy: &'static str,
    max: &'static str,
    queue: Option<&'static str>,
    label: Option<&'static str>,
    display: &'static str,
}

fn threads(e: &Ep, w: &Window, base: Option<&Window>) -> Vec<Component> {
    let mut out = Vec::new();
    let families = [
        ThreadFamily {
            busy: "tomcat_threads_busy_threads",
            max: "tomcat_threads_config_max_threads",
            queue: None,
            label: Some("name"),
            display: "Tomcat threads",
        },
        ThreadFamily {
            busy: "jetty_threads_busy",
            max: "jetty_threads_config_max",
            queue: Some("jetty_threads_jobs"),
            label: None,
            display: "Jetty threads",
        },
        ThreadFamily {
            busy: "executor_active_threads",
            max: "executor_pool_max_threads",
            queue: Some("executor_queued_tasks"),
            label: Some("name"),
            display: "Worker pool",
        },
    ];
    for ThreadFamily {
        busy: busy_n,
        max: max_n,
        queue: queue_n,
        label,
        display,
    } in families
    {
        let group = label.unwrap_or("");
        let maxes = e.by_label(max_n, group);
        let queues = queue_n.map(|q| e.by_label(q, group)).unwrap_or_default();
        for (key, busy) in e.by_label(busy_n, group) {
            let Some(b) = level(busy, w) else { continue };
            let m = maxes.get(&key).and_then(|s| level(s, w)).map(|l| l.last);
            let q: Option<Level> = queues.get(&key).and_then(|s| level(s, w));
            let name = if key.is_empty() {
                display.to_string()
            } else {
                format!("{display} `{key}`")
            };
            let mut c = row(name, Kind::Threads, e.name);
            c.state = match m {
                Some(m) if m > 0.0 => {
                    c.utilisation = Some(b.mean / m);
                    format!("{}/{} busy", num(b.mean), num(m))
                }
                _ => format!("{} busy", num(b.mean)),
            };
            if let Some(q) = q {
                c.state
                    .push_str(&format!(", {} queued (max {})", num(q.mean), num(q.max)));
            }
            c.baseline = base.and_then(|bw| {
                let bl = level(busy, bw)?;
                let ql = queues
                    .get(&key)
                    .and_then(|s| level(s, bw))
                    .map_or(0.0, |l| l.mean);
                Some(format!("{} busy, {} queued", num(bl.mean), num(ql)))
            });
            let full = at_capacity(busy, &b, m, w);
            let queued = q.is_some_and(|q| q.mean >= BACKED_UP);
            if full {
                c.verdict = Verdict::Yes;
                c.evidence = if queued {
                    "every thread busy and requests queued for one".into()
                } else {
                    "every thread busy".into()
                };
            } else if queued && m.is_none() {
                c.verdict = Verdict::Yes;
                c.evidence = "requests queued for a thread".into();
            } else {
                c.evidence = match m {
                    Some(m) => format!(
                        "{} of {} threads free on average",
                        num((m - b.mean).max(0.0)),
                        num(m)
                    ),
                    None => "no queue".into(),
                };
            }
            out.push(c);
        }
    }
    out
}

fn mysql(e: &Ep, w: &Window, base: Option<&Window>) -> Option<Component> {
    if !e.has("mysql_up") && !e.has("mysql_global_status_threads_connected") {
        return None;
    }
    let mut c = row("MySQL".into(), Kind::Backend, e.name);
    let lvl = |n: &str, w: &Window| e.one(n).and_then(|s| level(s, w));
    let rt = |n: &str, w: &Window| e.one(n).and_then(|s| rate(s, w));
    let mut parts = Vec::new();
    let mut why = Vec::new();
    if lvl("mysql_up", w).is_some_and(|l| l.mean < 1.0) {
        why.push("the exporter could not reach MySQL".to_string());
    }
    let conn = lvl("mysql_global_status_threads_connected", w);
    let maxc = lvl("mysql_global_variables_max_connections", w).map(|l| l.last);
    if let Some(cn) = conn {
        match maxc {
            Some(m) if m > 0.0 => {
                parts.push(format!("{}/{} connections", num(cn.max), num(m)));
                c.utilisation = Some(cn.max / m);
                if cn.max >= FULL * m {
                    why.push("connections near max_connections".into());
                }
            }
            _ => parts.push(format!("{} connections", num(cn.max))),
        }
    }
    if let Some(r) = lvl("mysql_global_status_threads_running", w) {
        parts.push(format!("{} running", num(r.mean)));
    }
    if let Some(q) =
        rt("mysql_global_status_queries", w).or_else(|| rt("mysql_global_status_questions", w))
    {
        parts.push(format!("{} queries/s", num(q)));
    }
    if let Some(s) = rt("mysql_global_status_slow_queries", w) {
        parts.push(format!("{} slow/s", num(s)));
        if s > 0.0 {
            why.push("slow queries".into());
        }
    }
    if let Some(l) = lvl("mysql_global_status_innodb_row_lock_current_waits", w) {
        parts.push(format!("{} row lock waits", num(l.mean)));
        if l.mean >= BACKED_UP {
            why.push("queries waited on row locks".into());
        }
    }
    let reads = rt("mysql_global_status_innodb_buffer_pool_reads", w);
    let reqs = rt("mysql_global_status_innodb_buffer_pool_read_requests", w);
    if let (Some(r), Some(q)) = (reads, reqs) {
        if q > 0.0 {
            let hit = 1.0 - r / q;
            parts.push(format!("buffer pool hit {:.1}%", hit * 100.0));
            if hit < 0.95 && r > 100.0 {
                why.push("the buffer pool missed, reading from disk".into());
            }
        }
    }
    c.state = parts.join(", ");
    c.baseline = base.and_then(|b| {
        lvl("mysql_global_status_threads_connected", b)
            .map(|l| format!("{} connections", num(l.mean)))
    });
    if why.is_empty() {
        c.evidence = "no waits, no slow queries, connections to spare".into();
    } else {
        c.verdict = Verdict::Yes;
        c.evidence = why.join("; ");
    }
    Some(c)
}

fn postgres(e: &Ep, w: &Window, base: Option<&Window>) -> Option<Component> {
    if !e.has("pg_up") && !e.has("pg_stat_activity_count") {
        return None;
    }
    let mut c = row("PostgreSQL".into(), Kind::Backend, e.name);
    let conns = sum_levels(e.named("pg_stat_activity_count"), w);
    let maxc = e
        .one("pg_settings_max_connections")
        .and_then(|s| level(s, w))
        .map(|l| l.last);
    let mut why = Vec::new();
    if e.one("pg_up")
        .and_then(|s| level(s, w))
        .is_some_and(|l| l.mean < 1.0)
    {
        why.push("the exporter could not reach PostgreSQL".to_string());
    }
    c.state = match (conns, maxc) {
        (Some(cn), Some(m)) if m > 0.0 => {
            c.utilisation = Some(cn.max / m);
            if cn.max >= FULL * m {
                why.push("connections near max_connections".into());
            }
            format!("{}/{} connections", num(cn.max), num(m))
        }
        (Some(cn), _) => format!("{} connections", num(cn.max)),
        _ => "up".into(),
    };
    c.baseline = base
        .and_then(|b| sum_levels(e.named("pg_stat_activity_count"), b))
        .map(|l| format!("{} connections", num(l.mean)));
    if why.is_empty() {
        c.evidence = "connections to spare".into();
    } else {
        c.verdict = Verdict::Yes;
        c.evidence = why.join("; ");
    }
    Some(c)
}

fn redis(e: &Ep, w: &Window, base: Option<&Window>) -> Option<Component> {
    if !e.has("redis_up") && !e.has("redis_connected_clients") {
        return None;
    }
    let mut c = row("Redis".into(), Kind::Backend, e.name);
    let lvl = |n: &str| e.one(n).and_then(|s| level(s, w));
    let cpu = sum_rates(
        e.series.iter().copied().filter(|s| {
            s.name == "redis_cpu_user_seconds_total" || s.name == "redis_cpu_sys_seconds_total"
        }),
        w,
    );
    let mut parts = Vec::new();
    let mut why: Vec<String> = Vec::new();
    if let Some(ops) = e
        .one("redis_commands_processed_total")
        .and_then(|s| rate(s, w))
    {
        parts.push(format!("{} ops/s", num(ops)));
    }
    if let Some(u) = cpu {
        // Commands run on one thread: one core is the ceiling.
        parts.push(format!("CPU {} of its one thread", pct(u)));
        c.utilisation = Some(u);
        if u >= CPU_SATURATED {
            why.push("its command thread was busy all the time".into());
        }
    }
    if let (Some(cl), Some(m)) = (
        lvl("redis_connected_clients"),
        lvl("redis_config_maxclients"),
    ) {
        parts.push(format!("{}/{} clients", num(cl.max), num(m.last)));
        if m.last > 0.0 && cl.max >= FULL * m.last {
            why.push("clients near maxclients".into());
        }
    }
    if let (Some(used), Some(m)) = (
        lvl("redis_memory_used_bytes"),
        lvl("redis_memory_max_bytes"),
    ) {
        if m.last > 0.0 {
            parts.push(format!("memory {}", pct(used.max / m.last)));
            if used.max >= FULL * m.last {
                why.push("memory near maxmemory".into());
            }
        } else {
            parts.push(format!("memory {}", bytes(used.max)));
        }
    }
    if let Some(ev) = e.one("redis_evicted_keys_total").and_then(|s| rate(s, w)) {
        if ev > 0.0 {
            parts.push(format!("{} evictions/s", num(ev)));
            why.push("keys were evicted".into());
        }
    }
    if let Some(b) = lvl("redis_blocked_clients") {
        if b.mean >= BACKED_UP {
            parts.push(format!("{} blocked clients", num(b.mean)));
        }
    }
    c.state = parts.join(", ");
    c.baseline = base.and_then(|b| {
        e.one("redis_commands_processed_total")
            .and_then(|s| rate(s, b))
            .map(|r| format!("{} ops/s", num(r)))
    });
    if why.is_empty() {
        c.evidence = "CPU, clients and memory well below their limits".into();
    } else {
        c.verdict = Verdict::Yes;
        c.evidence = why.join("; ");
    }
    Some(c)
}

fn nginx(e: &Ep, w: &Window, base: Option<&Window>) -> Option<Component> {
    if !e.has("nginx_connections_active") {
        return None;
    }
    let mut c = row("nginx".into(), Kind::Proxy, e.name);
    let active = level(e.one("nginx_connections_active")?, w)?;
    let waiting = e.one("nginx_connections_waiting").and_then(|s| level(s, w));
    let accepted = e.one("nginx_connections_accepted").and_then(|s| rate(s, w));
    let handled = e.one("nginx_connections_handled").and_then(|s| rate(s, w));
    let reqs = e.one("nginx_http_requests_total").and_then(|s| rate(s, w));
    let mut parts = vec![format!("{} active connections", num(active.max))];
    if let Some(wt) = waiting {
        parts.push(format!("{} idle keep-alive", num(wt.mean)));
    }
    if let Some(r) = reqs {
        parts.push(format!("{} req/s", num(r)));
    }
    let dropped = match (accepted, handled) {
        (Some(a), Some(h)) => (a - h).max(0.0),
        _ => 0.0,
    };
    if dropped > 0.0 {
        parts.push(format!("{} dropped connections/s", num(dropped)));
    }
    c.state = parts.join(", ");
    c.baseline = base
        .and_then(|b| level(e.one("nginx_connections_active")?, b))
        .map(|l| format!("{} active", num(l.mean)));
    if dropped > 0.0 {
        c.verdict = Verdict::Yes;
        c.evidence = "accepted connections were not handled: worker_connections exhausted".into();
    } else {
        c.evidence = "every accepted connection handled".into();
    }
    Some(c)
}

fn fds(e: &Ep, w: &Window) -> Option<Component> {
    let open = level(e.one("process_open_fds")?, w)?;
    let max = level(e.one("process_max_fds")?, w)?.last;
    if max <= 0.0 {
        return None;
    }
    let mut c = row("File descriptors".into(), Kind::Fds, e.name);
    let u = open.max / max;
    c.utilisation = Some(u);
    c.state = format!("{}/{} open", num(open.max), num(max));
    if u >= FULL {
        c.verdict = Verdict::Yes;
        c.evidence = "near the open-files limit".into();
    } else {
        c.evidence = "far from the limit".into();
    }
    Some(c)
}

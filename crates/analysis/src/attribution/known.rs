//! The metric families pado knows by name, and what "saturated" means for each.
//!
//! Names follow Micrometer (Spring Boot actuator: `process_cpu_usage`,
//! `hikaricp_connections_*`, `tomcat_threads_*`, `executor_*`, `jvm_*`), the
//! Prometheus client conventions (`process_cpu_seconds_total`,
//! `process_open_fds`), node_exporter (`node_cpu_seconds_total`, `node_load1`,
//! `node_memory_*`), mysqld_exporter (`mysql_global_status_*`), postgres_exporter
//! (`pg_*`), redis_exporter (`redis_*`) and nginx-prometheus-exporter
//! (`nginx_*`), and vLLM's scheduler (`vllm:num_requests_running`, `_waiting`,
//! `vllm:kv_cache_usage_perc`; the names LLM servers compatible with it export
//! too). Thresholds are the ones an engineer applies reading Grafana:
//! a pool or thread set is saturated when it is at its maximum with work
//! waiting; a CPU at 85% or more of its cores; GC over 10% of wall time; a heap
//! or memory 90% full.

use pado_base::units::{memory as bytes, percent as pct};
use std::collections::BTreeMap;

use pado_results::{Observations, ObservedSeries};

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
/// A thread maximum at or above which a pool is unbounded (Java executors say
/// `Integer.MAX_VALUE`, 2147483647): it cannot fill up.
pub const UNBOUNDED: f64 = 1_000_000.0;

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
const PREFIXES2: [&str; 6] = [
    "vllm:",
    "nginx_",
    "pg_",
    "pado_target_",
    "container_spec_cpu_",
    "node_pressure_cpu_",
];
/// Busy share of a host's CPUs at or above which they were all taken: a process
/// below its CPU limit there is contended. Higher than [`CPU_SATURATED`]: a host at
/// 85% still has a CPU free now and then, and the load generator on the same host
/// makes 85% common.
pub const HOST_FULL: f64 = 0.95;
/// Share of wall time some task waited for a CPU (node_exporter's CPU pressure,
/// `node_pressure_cpu_waiting_seconds_total`) at or above which a process below
/// its CPU limit is contended: runnable, but neighbours had the CPU.
pub const CPU_PRESSURE_CONTENDED: f64 = 0.20;

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
    // What each host's CPUs were doing, for the processes on it (contention).
    let mut host_cpu: BTreeMap<String, HostCpu> = BTreeMap::new();
    for (e, log) in eps.iter().zip(&obs.endpoints) {
        if let Some(n) = node_cpus(e) {
            host_cores.insert(host_of(&log.url), n as f64);
            host_cpu.insert(host_of(&log.url), HostCpu::of(e, w, base));
        }
    }
    for (e, log) in eps.iter().zip(&obs.endpoints) {
        let host = host_cores.get(&host_of(&log.url)).copied();
        let allowed = allowed_cpus(e, w, host);
        let hc = host_cpu
            .get(&host_of(&log.url))
            .copied()
            .unwrap_or_else(|| HostCpu::of(e, w, base));
        out.extend(process_cpu(e, w, base, allowed.as_ref(), host, &hc));
        out.extend(machine_cpu(e, w, base, host));
        out.extend(node_memory(e, w, base));
        out.extend(jvm_heap(e, w, base));
        out.extend(jvm_gc(e, w, base));
        out.extend(hikari(e, w, base));
        out.extend(threads(e, w, base));
        out.extend(mysql(e, w, base));
        out.extend(postgres(e, w, base));
        out.extend(redis(e, w, base));
        out.extend(nginx(e, w, base));
        out.extend(llm_batch(e, w, base));
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

/// What a host's CPUs were doing, read from node_exporter on that host (or the
/// endpoint's own host-wide `system_cpu_usage`): how busy they were and how long
/// tasks waited for one, in the window and at low load. A process below its CPU
/// limit on a host whose CPUs are all busy, or whose tasks wait for a CPU, is
/// contended: it wanted more CPU than it got.
#[derive(Clone, Copy, Debug, Default)]
struct HostCpu {
    /// Busy share of the host's CPUs in the window (0..=1).
    busy: Option<f64>,
    /// Share of wall time some task waited for a CPU in the window (PSI).
    waiting: Option<f64>,
    /// The same at low load.
    busy_base: Option<f64>,
    /// The same at low load.
    waiting_base: Option<f64>,
}

impl HostCpu {
    fn of(e: &Ep, w: &Window, base: Option<&Window>) -> HostCpu {
        let busy = |win: &Window| -> Option<f64> {
            match node_cpus(e) {
                Some(n) => {
                    let mode = |m: &'static str| {
                        e.named("node_cpu_seconds_total")
                            .filter(move |s| s.label("mode") == m)
                    };
                    let idle = sum_rates(mode("idle"), win)?;
                    let io = sum_rates(mode("iowait"), win).unwrap_or(0.0);
                    Some((1.0 - (idle + io) / n as f64).clamp(0.0, 1.0))
                }
                None => Some(level(e.one("system_cpu_usage")?, win)?.mean.clamp(0.0, 1.0)),
            }
        };
        let waiting = |win: &Window| {
            e.one("node_pressure_cpu_waiting_seconds_total")
                .and_then(|s| rate(s, win))
        };
        HostCpu {
            busy: busy(w),
            waiting: waiting(w),
            busy_base: base.and_then(busy),
            waiting_base: base.and_then(waiting),
        }
    }

    /// Why a process below its limit was contended in the window (`base`: at low
    /// load), in words; `None` when the host had CPU to spare.
    fn contention(&self, at_base: bool) -> Option<String> {
        let (busy, waiting) = if at_base {
            (self.busy_base, self.waiting_base)
        } else {
            (self.busy, self.waiting)
        };
        let mut why = Vec::new();
        if let Some(b) = busy.filter(|b| *b >= HOST_FULL) {
            why.push(format!("the host's CPUs were {} busy", pct(b)));
        }
        if let Some(p) = waiting.filter(|p| *p >= CPU_PRESSURE_CONTENDED) {
            why.push(format!(
                "tasks waited for a CPU {} of the time (node_pressure_cpu_waiting_seconds_total)",
                pct(p.min(1.0))
            ));
        }
        (!why.is_empty()).then(|| why.join(" and "))
    }
}

/// How many CPUs a process may use, and which metric said so.
struct Allowed {
    /// CPUs (a quota may make it fractional).
    cpus: f64,
    /// Where the figure came from, for the evidence.
    source: String,
}

/// The CPUs the process behind `e` may use: a cgroup CPU quota exposed on the
/// same page (cAdvisor's `container_spec_cpu_quota` / `container_spec_cpu_period`,
/// in microseconds, one container), else Micrometer's `system_cpu_count` (the
/// JVM's `availableProcessors()`: it counts the CPUs of the affinity mask and the
/// cpuset, and a quota rounded up), else the host's cores (node_exporter on the
/// same host). The smaller of a quota and a count wins: a process pinned to one
/// CPU with a quota of two can use one.
fn allowed_cpus(e: &Ep, w: &Window, host: Option<f64>) -> Option<Allowed> {
    let count = e
        .one("system_cpu_count")
        .and_then(|s| level(s, w))
        .map(|l| l.last)
        .filter(|n| n.is_finite() && *n > 0.0)
        .map(|n| Allowed {
            cpus: n,
            source: "system_cpu_count".into(),
        })
        .or_else(|| {
            host.filter(|n| *n > 0.0).map(|n| Allowed {
                cpus: n,
                source: "the host's cores (node_exporter)".into(),
            })
        });
    match (count, cgroup_quota(e, w)) {
        (Some(c), Some(q)) if c.cpus <= q => Some(c),
        (_, Some(q)) => Some(Allowed {
            cpus: q,
            source: "the cgroup CPU quota (container_spec_cpu_quota / _period)".into(),
        }),
        (c, None) => c,
    }
}

/// CPUs granted by a cgroup quota: quota / period of the one container on the
/// page that has a quota (-1 or 0: none). Several different quotas are a
/// cAdvisor page about many containers, which says nothing about this process.
fn cgroup_quota(e: &Ep, w: &Window) -> Option<f64> {
    let periods = e.named("container_spec_cpu_period").collect::<Vec<_>>();
    let mut quotas = e.named("container_spec_cpu_quota").filter_map(|q| {
        let quota = level(q, w)?.last;
        let period = periods
            .iter()
            .find(|p| p.labels == q.labels)
            .and_then(|p| level(p, w))?
            .last;
        (quota > 0.0 && period > 0.0).then_some(quota / period)
    });
    let first = quotas.next()?;
    quotas
        .all(|q| (q - first).abs() < 1e-9)
        .then_some(first)
        .filter(|q| q.is_finite())
}

/// "1 core" or "2 cores" (quotas may be fractional).
fn cores(n: f64) -> String {
    if (n - 1.0).abs() < 1e-9 {
        "1 core".into()
    } else {
        format!("{} cores", num(n))
    }
}

/// The process's CPU over the window, judged against the CPUs it may use
/// ([`allowed_cpus`]). CPU-time counters are preferred: Micrometer's
/// `process_cpu_time_ns_total` (`getProcessCpuTime()`), then the Prometheus
/// clients' `process_cpu_seconds_total`. Micrometer's `process_cpu_usage` gauge
/// (`getProcessCpuLoad()`) is a share of **all the host's** CPUs, so a JVM
/// pinned to one core of two reads 50% while that core is full; it is only
/// used without a counter, scaled by the host's cores when node_exporter gives
/// them, and the evidence says what was assumed.
fn process_cpu(
    e: &Ep,
    w: &Window,
    base: Option<&Window>,
    allowed: Option<&Allowed>,
    host: Option<f64>,
    host_cpu: &HostCpu,
) -> Option<Component> {
    const NS: &str = "process_cpu_time_ns_total";
    const SECS: &str = "process_cpu_seconds_total";
    const GAUGE: &str = "process_cpu_usage";
    let counter = e
        .one(NS)
        .map(|s| (s, 1e-9, NS))
        .or_else(|| e.one(SECS).map(|s| (s, 1.0, SECS)));
    let gauge = e.one(GAUGE);
    if counter.is_none() && gauge.is_none() {
        return None;
    }
    let gauge_mean = |win: &Window| gauge.and_then(|g| level(g, win)).map(|l| l.mean);
    // Cores busy on average over a window. The gauge's host is node_exporter's
    // when known, else taken to be what the process may use (the unpinned case).
    let gauge_host = host.or(allowed.map(|a| a.cpus));
    let busy = |win: &Window| -> Option<f64> {
        match counter {
            Some((s, k, _)) => rate(s, win).map(|r| r * k),
            None => Some(gauge_mean(win)? * gauge_host?),
        }
    };
    let mut c = row("CPU (process)".into(), Kind::ProcessCpu, e.name);
    let source = match (counter, host) {
        (Some((_, _, name)), _) => format!("measured by {name} (CPU time)"),
        (None, Some(h)) => format!("measured by {GAUGE} × the host's {}", cores(h)),
        (None, None) => format!("measured by {GAUGE}, a share of all the host's CPUs: if the process may use fewer, it was busier than this (expose {NS})"),
    };
    let Some(allowed) = allowed.filter(|a| a.cpus > 0.0) else {
        if counter.is_some() {
            c.state = format!("{} cores busy", num(busy(w)?));
            c.verdict = Verdict::Unknown;
            c.evidence = "core count unknown: scrape node_exporter on the same host, or expose system_cpu_count".into();
            return Some(c);
        }
        // Only the gauge, and nothing to say how many cores: a share of them all.
        let u = gauge_mean(w)?.clamp(0.0, 1.0);
        c.state = format!("{} of all cores", pct(u));
        c.utilisation = Some(u);
        let b = base.and_then(gauge_mean);
        c.baseline = b.map(pct);
        judge_cpu(&mut c, u, b, &source, host_cpu);
        return Some(c);
    };
    let n = allowed.cpus;
    let used = busy(w)?;
    let u = (used / n).clamp(0.0, 1.0);
    c.utilisation = Some(u);
    c.state = format!(
        "{} of the {} it may use ({} busy)",
        pct(u),
        cores(n),
        num(used)
    );
    let b = base.and_then(busy).map(|x| (x / n).clamp(0.0, 1.0));
    c.baseline = b.map(pct);
    let mut source = format!("{} allowed ({}), {source}", cores(n), allowed.source);
    if let (Some(_), Some(g)) = (counter, gauge_mean(w)) {
        // The gauge is about all the host's CPUs: say so when it reads low.
        if g.is_finite() && used > 0.1 && g * n < 0.75 * used {
            source.push_str(&format!(
                "; {GAUGE} read {}, a share of all the host's CPUs",
                pct(g.clamp(0.0, 1.0))
            ));
        }
    }
    judge_cpu(&mut c, u, b, &source, host_cpu);
    Some(c)
}

/// Verdict and evidence of a process CPU row at utilisation `u` (`base` at low
/// load), measured as `source` says. Below [`CPU_SATURATED`] of what it may use,
/// the process is **contended** when its host's CPUs were busy or its tasks waited
/// for one ([`HostCpu`]): neighbours took the CPU it wanted, so CPU is still its
/// limit (the row is renamed `CPU (contended)`), never "CPU left idle".
fn judge_cpu(c: &mut Component, u: f64, base: Option<f64>, source: &str, host: &HostCpu) {
    let contended = host.contention(false);
    if u >= CPU_SATURATED {
        c.verdict = Verdict::Yes;
        c.evidence = format!(
            "the process used {} of the CPU it may use: {source}",
            pct(u)
        );
    } else if let Some(why) = contended {
        c.component = "CPU (contended)".into();
        c.kind = Kind::ContendedCpu;
        c.verdict = Verdict::Yes;
        c.state.push_str(", contended");
        c.evidence = format!(
            "contended: the process used {} of the CPU it may use while {why}; neighbours took the rest, so it got less CPU than it wanted and CPU is still its limit: {source}",
            pct(u)
        );
    } else {
        c.evidence = format!("{} of the CPU it may use left idle: {source}", pct(1.0 - u));
    }
    let saturated_base = base.is_some_and(|b| b >= CPU_SATURATED);
    let contended_base = base.is_some() && host.contention(true).is_some();
    c.mark_busy_throughout(saturated_base || (c.kind == Kind::ContendedCpu && contended_base));
}

/// The machine's CPUs: node_exporter's per-CPU counters, else Micrometer's
/// `system_cpu_usage` (host-wide). Its core count is node_exporter's (`host`
/// when another endpoint on the same host is node_exporter), never
/// `system_cpu_count`: that counts the CPUs the process may use, which a pinned
/// or limited process has fewer of than its host.
fn machine_cpu(e: &Ep, w: &Window, base: Option<&Window>, host: Option<f64>) -> Option<Component> {
    let mut c = row("CPU (machine)".into(), Kind::MachineCpu, e.name);
    let ncpu_node = node_cpus(e);
    // Busy share and iowait share of the machine's CPUs over a window.
    let measure = |win: &Window| -> Option<(f64, f64)> {
        if let Some(n) = ncpu_node {
            let mode = |m: &'static str| {
                e.named("node_cpu_seconds_total")
                    .filter(move |s| s.label("mode") == m)
            };
            let idle_r = sum_rates(mode("idle"), win)?;
            let io_r = sum_rates(mode("iowait"), win).unwrap_or(0.0);
            let n = n as f64;
            Some(((1.0 - (idle_r + io_r) / n).clamp(0.0, 1.0), io_r / n))
        } else {
            let l = level(e.one("system_cpu_usage")?, win)?;
            Some((l.mean.clamp(0.0, 1.0), 0.0))
        }
    };
    if ncpu_node.is_none() && !e.has("system_cpu_usage") {
        return None;
    }
    let (util, iowait) = measure(w)?;
    let ncpu = ncpu_node.map(|n| n as f64).or(host);
    let load_s = e
        .one("node_load1")
        .or_else(|| e.one("system_load_average_1m"));
    let overloaded = |win: &Window| {
        let l = load_s.and_then(|s| level(s, win));
        (l, l.zip(ncpu).is_some_and(|(l, n)| l.max >= 1.5 * n))
    };
    c.utilisation = Some(util);
    c.state = format!("{} busy", pct(util));
    if let Some(n) = ncpu {
        c.state.push_str(&format!(" of {} cores", num(n)));
    }
    if iowait >= 0.05 {
        c.state.push_str(&format!(", iowait {}", pct(iowait)));
    }
    let (load, over) = overloaded(w);
    if let Some(l) = load {
        c.state.push_str(&format!(", load1 {}", num(l.max)));
        if let Some(n) = ncpu {
            c.state.push_str(&format!(" ({}× cores)", num(l.max / n)));
        }
    }
    let at_base = base.and_then(|b| measure(b).map(|m| (m, overloaded(b).1)));
    c.baseline = at_base.map(|((u, _), _)| format!("{} busy", pct(u)));
    if util >= CPU_SATURATED {
        c.verdict = Verdict::Yes;
        c.evidence = format!("the machine's CPUs were {} busy", pct(util));
    } else if iowait >= 0.2 {
        c.verdict = Verdict::Yes;
        c.evidence = format!("CPUs waited on disk {} of the time", pct(iowait));
    } else if over {
        c.verdict = Verdict::Yes;
        c.evidence = "the run queue was 1.5× the core count or longer".into();
    } else {
        c.evidence = format!("{} idle", pct(1.0 - util - iowait));
    }
    c.mark_busy_throughout(at_base.is_some_and(|((u, io), over_b)| {
        (util >= CPU_SATURATED && u >= CPU_SATURATED)
            || (iowait >= 0.2 && io >= 0.2)
            || (util < CPU_SATURATED && iowait < 0.2 && over_b)
    }));
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
    let used_base = base
        .and_then(|b| level(e.one("node_memory_MemAvailable_bytes")?, b))
        .map(|l| 1.0 - l.mean / total);
    c.baseline = used_base.map(|u| format!("{} used", pct(u)));
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
    c.mark_busy_throughout(swap < 100.0 && used_base.is_some_and(|u| u >= FULL));
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
    let used_base = base.and_then(|b| sum_levels(used_s.iter().copied(), b));
    c.baseline = used_base.map(|l| bytes(l.mean));
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
    c.mark_busy_throughout(used_base.is_some_and(|l| l.mean / max >= FULL));
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
    let share_base = base.and_then(|b| sum_rates(sums.iter().copied(), b));
    c.baseline = share_base.map(|s| format!("{:.1}% of time", s * 100.0));
    if share >= GC_SATURATED {
        c.verdict = Verdict::Yes;
        c.evidence = format!("GC pauses took {:.0}% of wall time", share * 100.0);
    } else {
        c.evidence = "GC pauses were a small share of the time".into();
    }
    c.mark_busy_throughout(share_base.is_some_and(|s| s >= GC_SATURATED));
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
        // At low load: (active level, mean pending, timeouts per second).
        let at_base = base.and_then(|b| {
            let a = level(active, b)?;
            let p = pending
                .get(&pool)
                .and_then(|s| level(s, b))
                .map_or(0.0, |l| l.mean);
            let t = timeouts.get(&pool).and_then(|s| rate(s, b)).unwrap_or(0.0);
            Some((a, p, t))
        });
        c.baseline = at_base.map(|(a, p, _)| format!("{} active, {} pending", num(a.mean), num(p)));
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
        // Requests waited (or timed out) at low load too, and no more now.
        let pending_now = p.map_or(0.0, |p| p.mean);
        c.mark_busy_throughout(at_base.is_some_and(|(_, pb, tb)| {
            (tb > 0.0 || pb >= BACKED_UP) && !grew(pb, pending_now) && !grew(tb, timed_out)
        }));
        out.push(c);
    }
    out
}

/// An LLM server's batch (vLLM's scheduler, by its metric names): a request waits
/// (`vllm:num_requests_waiting`) only when the batch cannot take it, its
/// `max_num_seqs` reached or its KV cache full; so requests running with others
/// waiting is the batch limit, whatever the limit's number (vLLM does not export
/// it). The row speaks of the running and waiting requests and the KV cache's use
/// (`vllm:kv_cache_usage_perc`, or the older `vllm:gpu_cache_usage_perc`: 0..1).
fn llm_batch(e: &Ep, w: &Window, base: Option<&Window>) -> Vec<Component> {
    let mut out = Vec::new();
    let waiting = e.by_label("vllm:num_requests_waiting", "model_name");
    let mut cache = e.by_label("vllm:gpu_cache_usage_perc", "model_name");
    cache.extend(e.by_label("vllm:kv_cache_usage_perc", "model_name"));
    for (model, running) in e.by_label("vllm:num_requests_running", "model_name") {
        let Some(r) = level(running, w) else { continue };
        let q = waiting.get(&model).and_then(|s| level(s, w));
        let kv = cache.get(&model).and_then(|s| level(s, w));
        let name = if model.is_empty() {
            "LLM batch".to_string()
        } else {
            format!("LLM batch `{model}`")
        };
        let mut c = row(name, Kind::Pool, e.name);
        let waiting_now = q.map_or(0.0, |q| q.mean);
        c.state = format!("{} running{}", num(r.mean), peak(&r));
        if let Some(q) = &q {
            c.state
                .push_str(&format!(", {} waiting{}", num(q.mean), peak(q)));
        }
        let kv_text = kv.map(|k| format!("; KV cache {}", pct(k.mean.clamp(0.0, 1.0))));
        if let Some(k) = &kv {
            c.utilisation = Some(k.mean.clamp(0.0, 1.0));
        }
        c.state.push_str(kv_text.as_deref().unwrap_or(""));
        // At low load: (running level, mean waiting).
        let at_base = base.and_then(|b| {
            let rb = level(running, b)?;
            let qb = waiting
                .get(&model)
                .and_then(|s| level(s, b))
                .map_or(0.0, |l| l.mean);
            Some((rb, qb))
        });
        c.baseline =
            at_base.map(|(rb, qb)| format!("{} running, {} waiting", num(rb.mean), num(qb)));
        if waiting_now >= BACKED_UP && r.max > 0.0 {
            c.verdict = Verdict::Yes;
            c.evidence = format!(
                "LLM batch full: {} running, {} waiting{}",
                num(r.max),
                num(waiting_now),
                kv_text.as_deref().unwrap_or("")
            );
        } else {
            c.evidence = format!(
                "no request waited for a place in the batch (at most {} running)",
                num(r.max)
            );
        }
        c.mark_busy_throughout(
            at_base.is_some_and(|(_, qb)| qb >= BACKED_UP && !grew(qb, waiting_now)),
        );
        out.push(c);
    }
    out
}

/// Whether a waiting count grew markedly from `before` (low load) to `now`: more
/// than doubled and by at least [`BACKED_UP`]. A queue that grew is what changed.
fn grew(before: f64, now: f64) -> bool {
    now > 2.0 * before + BACKED_UP
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

/// The thread-pool families pado knows: Tomcat, Jetty and Micrometer's executors.
const THREAD_FAMILIES: [ThreadFamily; 3] = [
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

/// Thread sets of the request path. A pool never busy, with nothing queued, in
/// the window and at low load (an executor nobody submits to) is listed only by
/// name in one "Idle pools" row; a maximum of [`UNBOUNDED`] or more is no limit
/// at all (`Integer.MAX_VALUE` for a cached thread pool), so such a pool is
/// never "full".
fn threads(e: &Ep, w: &Window, base: Option<&Window>) -> Vec<Component> {
    let mut out = Vec::new();
    let mut idle: Vec<String> = Vec::new();
    for ThreadFamily {
        busy: busy_n,
        max: max_n,
        queue: queue_n,
        label,
        display,
    } in THREAD_FAMILIES
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
            let unbounded = m.is_some_and(|m| m >= UNBOUNDED);
            // Never busy and nothing queued, in the window or at low load: noise.
            let quiet = |win: &Window| {
                level(busy, win).is_none_or(|l| l.max <= 0.0)
                    && queues
                        .get(&key)
                        .and_then(|s| level(s, win))
                        .is_none_or(|l| l.max <= 0.0)
            };
            if quiet(w) && base.is_none_or(quiet) {
                idle.push(if unbounded {
                    format!("{name} (unbounded)")
                } else {
                    name
                });
                continue;
            }
            let mut c = row(name, Kind::Threads, e.name);
            c.state = match m {
                Some(_) if unbounded => format!("{} busy (unbounded)", num(b.mean)),
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
            // At low load: (busy level, mean queued, full).
            let at_base = base.and_then(|bw| {
                let bl = level(busy, bw)?;
                let ql = queues
                    .get(&key)
                    .and_then(|s| level(s, bw))
                    .map_or(0.0, |l| l.mean);
                Some((bl, ql, at_capacity(busy, &bl, m, bw)))
            });
            c.baseline =
                at_base.map(|(bl, ql, _)| format!("{} busy, {} queued", num(bl.mean), num(ql)));
            let full = !unbounded && at_capacity(busy, &b, m, w);
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
                    Some(_) if unbounded => "unbounded: a thread for every task".into(),
                    Some(m) => format!(
                        "{} of {} threads free on average",
                        num((m - b.mean).max(0.0)),
                        num(m)
                    ),
                    None => "no queue".into(),
                };
            }
            // As full (or as backed up) at low load, and the queue did not grow.
            let queued_now = q.map_or(0.0, |q| q.mean);
            c.mark_busy_throughout(at_base.is_some_and(|(_, qb, full_b)| {
                let rule_b = if full {
                    full_b
                } else {
                    m.is_none() && qb >= BACKED_UP
                };
                rule_b && !grew(qb, queued_now)
            }));
            out.push(c);
        }
    }
    if !idle.is_empty() {
        // One short line for all of them, rather than a row each of "0/2147483647".
        let mut c = row("Idle pools".into(), Kind::Threads, e.name);
        c.state = idle.join(", ");
        c.evidence = "never busy, nothing queued".into();
        out.push(c);
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

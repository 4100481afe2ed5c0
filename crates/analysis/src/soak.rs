//! The soak verdict: under steady load, do the target's resources drift? A leak
//! shows as memory (or descriptors, or threads) that keeps rising while the load
//! does not; a connection leak or a slowing dependency as a pool whose use or
//! queue keeps rising; either usually before any threshold fails.
//!
//! Only periods of steady load are measured ([`drift::steady_periods`]): memory that
//! grows because the load grows is the load's doing. Within a period, its first
//! seconds are skipped as warm-up, then each resource series the target exposes
//! is fitted with a least-squares line (the slope's error widened for autocorrelated
//! samples, as latency drift's is). Memory is fitted through the lowest value of each
//! short window (its lower envelope): a garbage-collected heap rises and falls
//! between collections, and what a leak raises is the floor the collections reach.
//!
//! A rise that stops is not a leak: caches and pools fill up and then hold. So memory,
//! descriptors and threads must still be rising over the period's second half; what
//! grew and then levelled off is reported as such and does not count.

use pado_results::{Observations, ObservedSeries};
use serde::{Deserialize, Serialize};

use crate::drift::{self, fit, Fit, PeriodDrift, SteadyPeriod};

/// The method, in words, printed with the soak verdict.
pub const METHOD: &str = "within each period of steady load (its first 5 s skipped), a least-squares line through each resource the target exposes, the slope's standard error widened for autocorrelation; memory through the lowest value of each of about 20 windows (the floor garbage collections reach). Leak suspected: memory, descriptors or threads rising with p < 0.01 by at least 5% (memory, and at least 1 MiB) or 10% and 3 (descriptors, threads), and still rising through the period's second half (p < 0.05, at least a third of the slope). Pool drift: a pool's use or its waiting count rising with p < 0.01 by at least 1 and 10% of its mean or maximum. Latency drift: as summary.json's `drift_method` says";

/// Seconds the target's resources are measured after a period's warm-up, at least.
pub const MIN_SPAN_S: f64 = 20.0;

/// The soak verdict, worst last (so `max` picks the worst).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nothing drifted.
    #[default]
    Stable,
    /// Latency rose under steady load, the resources observed (if any) did not.
    LatencyDrift,
    /// A pool's use, or the work waiting for it, rose under steady load.
    PoolDrift,
    /// Memory, descriptors or threads kept rising under steady load.
    LeakSuspected,
}

impl Verdict {
    /// As people say it.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Stable => "stable",
            Verdict::LatencyDrift => "latency drift",
            Verdict::PoolDrift => "pool drift",
            Verdict::LeakSuspected => "leak suspected",
        }
    }
}

/// What a resource series measures, which decides how it is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    /// Resident memory, heap after collection, working set (bytes).
    Memory,
    /// Open file descriptors (sockets included).
    Descriptors,
    /// Live threads or goroutines.
    Threads,
    /// Connections (or workers) of a pool in use.
    Pool,
    /// Work waiting for a pool or queue.
    Waiting,
}

impl Resource {
    /// As people say it.
    pub fn words(self) -> &'static str {
        match self {
            Resource::Memory => "memory",
            Resource::Descriptors => "open descriptors",
            Resource::Threads => "threads",
            Resource::Pool => "pool in use",
            Resource::Waiting => "waiting",
        }
    }

    fn leaks(self) -> bool {
        matches!(
            self,
            Resource::Memory | Resource::Descriptors | Resource::Threads
        )
    }
}

/// Metric names the soak analysis reads (on top of the bottleneck table's).
pub fn wanted(name: &str) -> bool {
    MEMORY.contains(&name)
        || DESCRIPTORS.contains(&name)
        || THREADS.contains(&name)
        || POOL.contains(&name)
        || WAITING.contains(&name)
        || generic_pool(name).is_some()
}

const MEMORY: [&str; 9] = [
    "process_resident_memory_bytes",
    "jvm_gc_live_data_size_bytes",
    "jvm_memory_used_bytes",
    "go_memstats_heap_inuse_bytes",
    "go_memstats_heap_alloc_bytes",
    "nodejs_heap_size_used_bytes",
    "container_memory_working_set_bytes",
    "container_memory_rss",
    "redis_memory_used_bytes",
];
const DESCRIPTORS: [&str; 1] = ["process_open_fds"];
const THREADS: [&str; 4] = [
    "jvm_threads_live_threads",
    "jvm_threads_current",
    "go_goroutines",
    "nodejs_active_handles_total",
];
const POOL: [&str; 6] = [
    "hikaricp_connections_active",
    "jdbc_connections_active",
    "r2dbc_pool_acquired_connections",
    "pg_stat_activity_count",
    "redis_connected_clients",
    "mysql_global_status_threads_connected",
];
const WAITING: [&str; 5] = [
    "hikaricp_connections_pending",
    "jdbc_connections_pending",
    "r2dbc_pool_pending_connections",
    "executor_queued_tasks",
    "tomcat_threads_queue",
];

/// A gauge of a pool pado does not know by name: `connections`, `pool` or `conns` in
/// the name with a use word (`active`, `in_use`, `busy`, `acquired`) or a waiting word
/// (`pending`, `waiting`, `queued`).
fn generic_pool(name: &str) -> Option<Resource> {
    if name.ends_with("_total")
        || name.ends_with("_count")
        || name.ends_with("_sum")
        || name.ends_with("_bucket")
        || name.ends_with("_created")
    {
        return None;
    }
    let tokens: Vec<&str> = name.split('_').collect();
    let pooled = tokens
        .iter()
        .any(|t| matches!(*t, "connections" | "pool" | "conns" | "connection"));
    if !pooled {
        return None;
    }
    if tokens
        .iter()
        .any(|t| matches!(*t, "pending" | "waiting" | "queued"))
    {
        Some(Resource::Waiting)
    } else if tokens
        .iter()
        .any(|t| matches!(*t, "active" | "busy" | "acquired" | "inuse"))
        || name.contains("in_use")
    {
        Some(Resource::Pool)
    } else {
        None
    }
}

/// What `s` measures, if it is a resource the soak analysis judges.
pub fn classify(s: &ObservedSeries) -> Option<Resource> {
    if s.is_monotonic() {
        return None;
    }
    let n = s.name.as_str();
    if MEMORY.contains(&n) {
        // Heap pools only: non-heap (metaspace, code cache) grows as classes load.
        if n == "jvm_memory_used_bytes" && s.label("area") != "heap" {
            return None;
        }
        return Some(Resource::Memory);
    }
    if DESCRIPTORS.contains(&n) {
        return Some(Resource::Descriptors);
    }
    if THREADS.contains(&n) {
        return Some(Resource::Threads);
    }
    if POOL.contains(&n) {
        return Some(Resource::Pool);
    }
    if WAITING.contains(&n) {
        return Some(Resource::Waiting);
    }
    generic_pool(n)
}

/// One resource series within one steady period.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceDrift {
    /// What it measures.
    pub resource: Resource,
    /// The series: its name with its labels, `name{k="v"}`.
    pub series: String,
    /// The endpoint it was scraped from.
    pub endpoint: String,
    /// Whether it is in bytes.
    pub bytes: bool,
    /// The steady period.
    pub period: SteadyPeriod,
    /// The fitted line's value at the first and last second measured.
    pub from: f64,
    /// See `from`.
    pub to: f64,
    /// Change per hour, in the series' unit.
    pub slope_per_hour: f64,
    /// The fitted rise over the seconds measured, over their mean.
    pub relative_change: f64,
    /// Two-sided p-value of the slope.
    pub p_value: f64,
    /// Samples fitted (window floors, for memory).
    pub n: usize,
    /// Whether this drift counts toward the verdict.
    pub notable: bool,
    /// It rose notably at first, then stopped (caches or pools filling up): not a
    /// leak.
    pub levelled_off: bool,
}

impl ResourceDrift {
    /// The verdict this drift alone would give.
    pub fn verdict(&self) -> Verdict {
        match (self.notable, self.resource.leaks()) {
            (false, _) => Verdict::Stable,
            (true, true) => Verdict::LeakSuspected,
            (true, false) => Verdict::PoolDrift,
        }
    }
}

/// The soak analysis of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Soak {
    /// The worst of what drifted.
    pub verdict: Verdict,
    /// Seconds of steady load measured (after warm-up), over all periods.
    pub steady_s: f64,
    /// Latency within each steady period (as the summary's drift).
    pub latency: Vec<PeriodDrift>,
    /// Every resource series measured in every steady period: notable ones first.
    pub resources: Vec<ResourceDrift>,
    /// Whether the target's metrics were observed at all (without them only latency
    /// is judged).
    pub observed: bool,
    /// pado's own resident memory over the longest steady period, judged by the same
    /// rule as the target's memory: a rise here is the generator's, not the target's,
    /// and is not part of the verdict. Absent when pado did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<ResourceDrift>,
}

impl Soak {
    /// The drifts behind the verdict (empty when stable).
    pub fn findings(&self) -> impl Iterator<Item = &ResourceDrift> {
        self.resources.iter().filter(|r| r.notable)
    }

    /// What was measured, in words and in a fixed order: `latency`, then each kind
    /// of resource found (`memory`, `open descriptors`, ...).
    pub fn measured(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if !self.latency.is_empty() {
            out.push("latency");
        }
        for r in [
            Resource::Memory,
            Resource::Descriptors,
            Resource::Threads,
            Resource::Pool,
            Resource::Waiting,
        ] {
            if self.resources.iter().any(|x| x.resource == r) {
                out.push(r.words());
            }
        }
        out
    }
}

/// The soak analysis over `periods` (from [`drift::steady_periods`]), with the
/// latency drift already measured in them, the target's observed metrics and pado's
/// own resident memory per second (`(t, bytes)`). `None` when no period is long
/// enough to measure.
pub fn analyse(
    periods: &[SteadyPeriod],
    latency: &[PeriodDrift],
    obs: &Observations,
    generator_rss: &[(f64, f64)],
) -> Option<Soak> {
    let measured: Vec<&SteadyPeriod> = periods
        .iter()
        .filter(|p| p.end_s - p.start_s - drift::WARMUP_S as f64 >= MIN_SPAN_S)
        .collect();
    if measured.is_empty() && latency.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for s in &obs.series {
        let Some(resource) = classify(s) else {
            continue;
        };
        for p in &measured {
            if let Some(r) = judge(s, resource, p) {
                resources.push(r);
            }
        }
    }
    // Notable first, leaks before pools, then the largest relative change.
    resources.sort_by(|a, b| {
        b.verdict()
            .cmp(&a.verdict())
            .then(b.relative_change.total_cmp(&a.relative_change))
    });
    let mut verdict = resources
        .iter()
        .map(ResourceDrift::verdict)
        .max()
        .unwrap_or_default();
    if verdict == Verdict::Stable && latency.iter().any(|d| d.drift.notable) {
        verdict = Verdict::LatencyDrift;
    }
    let generator = measured
        .iter()
        .max_by(|a, b| (a.end_s - a.start_s).total_cmp(&(b.end_s - b.start_s)))
        .and_then(|p| {
            let own = ObservedSeries {
                endpoint: "pado".into(),
                name: "process_resident_memory_bytes".into(),
                kind: pado_metrics::MetricType::Gauge,
                points: generator_rss.to_vec(),
                ..Default::default()
            };
            judge(&own, Resource::Memory, p)
        });
    let steady_s = measured
        .iter()
        .map(|p| p.end_s - p.start_s - drift::WARMUP_S as f64)
        .sum::<f64>();
    Some(Soak {
        verdict,
        steady_s,
        latency: latency.to_vec(),
        resources,
        observed: !obs.series.is_empty() || !obs.endpoints.is_empty(),
        generator,
    })
}

/// `s` within period `p`, if it has enough points there.
fn judge(s: &ObservedSeries, resource: Resource, p: &SteadyPeriod) -> Option<ResourceDrift> {
    let from = p.start_s + drift::WARMUP_S as f64;
    let pts: Vec<(f64, f64)> = s
        .points
        .iter()
        .copied()
        .filter(|(t, v)| *t >= from && *t <= p.end_s && v.is_finite())
        .collect();
    if pts.len() < 8 || pts[pts.len() - 1].0 - pts[0].0 < MIN_SPAN_S {
        return None;
    }
    // A pool or queue that stayed at zero (idle, or a feature never used) says
    // nothing and would only lengthen the table.
    if pts.iter().all(|p| p.1 == 0.0) {
        return None;
    }
    let samples = if resource == Resource::Memory {
        floors(&pts)
    } else {
        pts
    };
    let whole = fit(&samples, 8)?;
    let rel = relative(&whole);
    let significant = |f: &Fit| {
        let (rise, rel) = (f.rise(), relative(f));
        f.p_value < 0.01
            && rise > 0.0
            && match resource {
                Resource::Memory => rel >= 0.05 && rise >= 1024.0 * 1024.0,
                Resource::Descriptors | Resource::Threads => rel >= 0.10 && rise >= 3.0,
                // Pools: whole connections, and a tenth of the level they move around.
                Resource::Pool | Resource::Waiting => rise >= 1.0 && rel >= 0.10,
            }
    };
    let bytes = s.name.ends_with("_bytes") || s.name == "container_memory_rss";
    let (notable, levelled_off) = if resource.leaks() {
        let (first, second) = halves(&samples);
        let persists = second
            .is_some_and(|h| h.p_value < 0.05 && h.slope > 0.0 && h.slope >= whole.slope / 3.0);
        let notable = significant(&whole) && persists;
        let rose_first = first.is_some_and(|f| significant(&f));
        (notable, !notable && !persists && rose_first)
    } else {
        (significant(&whole), false)
    };
    Some(ResourceDrift {
        resource,
        series: series_name(s),
        endpoint: s.endpoint.clone(),
        bytes,
        period: p.clone(),
        from: whole.at(whole.t_first),
        to: whole.at(whole.t_last),
        slope_per_hour: whole.slope * 3600.0,
        relative_change: rel,
        p_value: whole.p_value,
        n: whole.n,
        notable,
        levelled_off,
    })
}

/// The fitted rise over the fit's mean (0 for a zero mean that did not rise).
fn relative(f: &Fit) -> f64 {
    if f.mean.abs() > 0.0 {
        f.rise() / f.mean.abs()
    } else if f.rise() > 0.0 {
        1.0
    } else {
        0.0
    }
}

/// The fits of the first and second half of `samples` (by time).
fn halves(samples: &[(f64, f64)]) -> (Option<Fit>, Option<Fit>) {
    let (t0, t1) = (samples[0].0, samples[samples.len() - 1].0);
    let mid = (t0 + t1) / 2.0;
    let split = samples.partition_point(|s| s.0 < mid);
    (fit(&samples[..split], 4), fit(&samples[split..], 4))
}

/// Windows the memory floor is taken over, about this many per period.
const FLOOR_WINDOWS: f64 = 20.0;

/// The lowest value of each of about [`FLOOR_WINDOWS`] equal windows of `pts` (each
/// at least two samples wide), at the window's middle: the floor a collected heap
/// returns to, which a leak raises.
fn floors(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let (t0, t1) = (pts[0].0, pts[pts.len() - 1].0);
    let per = (pts.len() as f64 / FLOOR_WINDOWS).floor().max(2.0) as usize;
    if per <= 1 || t1 <= t0 {
        return pts.to_vec();
    }
    pts.chunks(per)
        .filter(|c| c.len() * 2 > per)
        .map(|c| {
            let t = (c[0].0 + c[c.len() - 1].0) / 2.0;
            let v = c.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
            (t, v)
        })
        .collect()
}

/// `name{k="v",...}` (labels sorted, as stored): how [`ResourceDrift::series`] names
/// a series, so a report can find it again.
pub fn series_name(s: &ObservedSeries) -> String {
    if s.labels.is_empty() {
        return s.name.clone();
    }
    let labels: Vec<String> = s
        .labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{v}\""))
        .collect();
    format!("{}{{{}}}", s.name, labels.join(","))
}

#[cfg(test)]
mod tests;

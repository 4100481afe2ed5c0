//! Which resource was the bottleneck: seed 000's "elimination table" (component,
//! state at saturation, bottleneck yes/no, evidence), computed from the target's
//! metrics scraped during the run.
//!
//! The state of every component the scrapes reveal is read over the **saturation
//! window** (the seconds at or beyond the load at which throughput stopped
//! keeping up, from [`crate::saturation`]) and compared with a **baseline** at low
//! load. [`known`] reads the common metric families (process and machine CPU,
//! load average, memory, JVM heap and GC, HikariCP, Tomcat/Jetty/executor
//! threads, MySQL, PostgreSQL, Redis and nginx exporters, file descriptors);
//! [`generic`] applies rules to everything else (a utilisation near its max, a
//! queue that grows). A component is the **limit** when it is saturated and
//! nothing it waits on is: worker threads that are all busy because they wait
//! for DB connections are a *consequence*, not the cause, as is a pool that
//! waits on a CPU-starved process. A component that was as saturated at low
//! load, when the service still kept up, is **busy throughout**: it did not
//! change, so it is not what stopped throughput from growing (a machine whose
//! CPUs a low-priority job keeps busy from the first second).

pub mod between_steps;
pub mod generic;
pub mod headline;
pub mod known;
pub mod live;
pub mod signals;
pub mod window_math;

use pado_results::{EndpointLog, Observations};
use serde::{Deserialize, Serialize};

use crate::saturation::{LoadSample, Saturation};
pub use window_math::Window;

/// Whether a component limited the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Saturated, and nothing it depends on was: the limit.
    Yes,
    /// Saturated because something it waits on was.
    Consequence,
    /// Saturated, but as much at low load, when the service kept up: not what
    /// changed, so not the limit by itself.
    #[serde(rename = "busy_throughout")]
    BusyThroughout,
    /// Had room to spare.
    No,
    /// Not enough data to say (e.g. CPU seconds without a core count).
    Unknown,
}

impl Verdict {
    /// Short form for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Yes => "YES",
            Verdict::Consequence => "no (consequence)",
            Verdict::BusyThroughout => "busy throughout",
            Verdict::No => "no",
            Verdict::Unknown => "?",
        }
    }
}

/// What sort of resource a row is about; decides which saturated component
/// explains which (see [`attribute`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The load generator itself.
    Generator,
    /// Machine or container memory, swap.
    Memory,
    /// JVM heap.
    Heap,
    /// Garbage collection.
    Gc,
    /// CPU of the machine (node_exporter, `system_cpu_usage`) or load average.
    MachineCpu,
    /// CPU of the service process.
    ProcessCpu,
    /// CPU of the service process below what it may use while its host's CPUs
    /// were busy (or its tasks waited for one): neighbours took the CPU it wanted.
    ContendedCpu,
    /// A database or cache server (MySQL, PostgreSQL, Redis).
    Backend,
    /// A connection pool of the service (HikariCP).
    Pool,
    /// Request-handling threads (Tomcat, Jetty, an executor).
    Threads,
    /// A proxy in front (nginx).
    Proxy,
    /// File descriptors.
    Fds,
    /// Found by a generic rule.
    Generic,
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// What it is (`DB pool HikariPool-1`, `CPU (process)`).
    pub component: String,
    /// Its kind.
    pub kind: Kind,
    /// Endpoint whose metrics showed it.
    pub endpoint: String,
    /// Its state in the saturation window.
    pub state: String,
    /// Its state at low load, when the run had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Bottleneck?
    pub verdict: Verdict,
    /// Why.
    pub evidence: String,
    /// Utilisation in the window (0..1) when it has one, for ranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilisation: Option<f64>,
}

impl Component {
    /// Whether the component ran out of room.
    pub fn saturated(&self) -> bool {
        matches!(
            self.verdict,
            Verdict::Yes | Verdict::Consequence | Verdict::BusyThroughout
        )
    }

    /// A row that was saturated in the window becomes [`Verdict::BusyThroughout`]
    /// when it was saturated by the same rule at low load too (`at_low_load`):
    /// then latency was still fine while it was full, so its being full is not
    /// what changed at saturation. [`attribute`] words the evidence once it
    /// knows whether anything else changed.
    pub(crate) fn mark_busy_throughout(&mut self, at_low_load: bool) {
        if at_low_load && self.verdict == Verdict::Yes {
            self.verdict = Verdict::BusyThroughout;
        }
    }
}

/// How scraping an endpoint went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndpointStatus {
    /// Name.
    pub name: String,
    /// URL.
    pub url: String,
    /// Scrapes attempted.
    pub scrapes: u64,
    /// Scrapes that failed.
    pub failed: u64,
    /// Failures by category.
    pub errors: std::collections::BTreeMap<String, u64>,
    /// First failure's detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Samples in the last good scrape.
    pub samples: u32,
    /// Mean scrape time, ms.
    pub mean_ms: f64,
}

impl From<&EndpointLog> for EndpointStatus {
    fn from(e: &EndpointLog) -> Self {
        EndpointStatus {
            name: e.name.clone(),
            url: e.url.clone(),
            scrapes: e.scrapes,
            failed: e.failed,
            errors: e.errors.clone(),
            first_error: e.first_error.clone(),
            samples: e.samples,
            mean_ms: e.mean_ms,
        }
    }
}

/// The table and what it concludes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// Where states were read.
    pub window: Window,
    /// The low-load comparison, when the run had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Window>,
    /// Whether the window is a real saturation point (false: the run never
    /// saturated and the window is its peak load).
    pub saturated_run: bool,
    /// Rows, limits first.
    pub components: Vec<Component>,
    /// The limiting component(s), in plain words.
    pub limit: Option<String>,
    /// Scrape health per endpoint.
    pub endpoints: Vec<EndpointStatus>,
}

/// Metric names the analysis reads (so the reader can skip an exporter's other
/// thousands of series).
pub fn wanted(name: &str) -> bool {
    known::wanted(name) || generic::wanted(name)
}

/// Pick the saturation window and the baseline from the run's seconds.
/// Saturation: the seconds at or above the throughput knee; without one (a
/// single load level, or a run that never saturated) the seconds at 90% of the
/// peak load or more. Baseline: loaded seconds at no more than half of that.
pub fn windows(
    samples: &[LoadSample],
    sat: Option<&Saturation>,
) -> Option<(Window, Option<Window>, bool)> {
    let peak = samples.iter().map(|s| s.load).fold(0.0, f64::max);
    if peak <= 0.0 {
        return None;
    }
    // A knee at the peak load means throughput rose to the end: not saturated.
    let knee = sat
        .and_then(|s| {
            s.throughput_knee_load
                .filter(|k| s.throughput_falls || *k < peak * 0.999)
        })
        .filter(|k| *k > 0.0);
    let (threshold, label, saturated) = match knee {
        Some(k) => (
            k,
            format!("saturation (load ≥ {})", pado_base::units::short(k)),
            true,
        ),
        None => (
            peak * 0.9,
            format!("peak load (≥ {})", pado_base::units::short(peak * 0.9)),
            false,
        ),
    };
    let hot: Vec<u32> = samples
        .iter()
        .filter(|s| s.load >= threshold && s.load > 0.0)
        .map(|s| s.t)
        .collect();
    let (first, last) = (*hot.first()?, *hot.last()?);
    let window = Window::new(label, first as f64, last as f64 + 1.0);
    let cold: Vec<u32> = samples
        .iter()
        .filter(|s| s.load > 0.0 && s.load <= threshold * 0.5 && s.t < first)
        .map(|s| s.t)
        .collect();
    let baseline = match (cold.first(), cold.last()) {
        (Some(a), Some(b)) => Some(Window::new(
            format!("low load (≤ {})", pado_base::units::short(threshold * 0.5)),
            *a as f64,
            *b as f64 + 1.0,
        )),
        _ => None,
    };
    Some((window, baseline, saturated))
}

/// Build the table for `obs` over `window` (and `baseline`), with `extra` rows
/// known from elsewhere (the load generator's self-check).
pub fn attribute(
    obs: &Observations,
    window: Window,
    baseline: Option<Window>,
    saturated_run: bool,
    extra: Vec<Component>,
) -> Attribution {
    let mut rows = extra;
    rows.extend(known::components(obs, &window, baseline.as_ref()));
    let claimed: Vec<String> = rows.iter().map(|r| r.component.clone()).collect();
    rows.extend(generic::components(
        obs,
        &window,
        baseline.as_ref(),
        &claimed,
    ));
    explain(&mut rows);
    rows.sort_by_key(|r| {
        (
            match r.verdict {
                Verdict::Yes => 0,
                Verdict::BusyThroughout => 1,
                Verdict::Consequence => 2,
                Verdict::No => 3,
                Verdict::Unknown => 4,
            },
            r.kind,
        )
    });
    let named = |v: Verdict| -> Vec<String> {
        rows.iter()
            .filter(|r| r.verdict == v)
            .map(|r| format!("{} ({})", r.component, r.endpoint))
            .collect()
    };
    let limits = named(Verdict::Yes);
    let throughout = named(Verdict::BusyThroughout);
    // What changed is the limit; what was as busy before is said to be so. When
    // nothing else changed, the busy-throughout rows are all there is: name
    // them, saying what they are, rather than claim nothing was saturated.
    let limit = if !limits.is_empty() {
        Some(limits.join(", "))
    } else if !throughout.is_empty() {
        Some(format!(
            "{}: busy throughout (as busy at low load), nothing else observed saturated",
            throughout.join(", ")
        ))
    } else {
        None
    };
    for r in rows
        .iter_mut()
        .filter(|r| r.verdict == Verdict::BusyThroughout)
    {
        r.evidence = if limits.is_empty() {
            format!(
                "{}; as busy at low load, when the service kept up: busy throughout, and nothing else observed changed (it may still be the limit, or the limit is not scraped)",
                r.evidence
            )
        } else {
            format!(
                "{}; as busy at low load, when the service kept up: busy throughout, not what changed",
                r.evidence
            )
        };
    }
    Attribution {
        window,
        baseline,
        saturated_run,
        limit,
        components: rows,
        endpoints: obs.endpoints.iter().map(EndpointStatus::from).collect(),
    }
}

/// A process below its CPU limit on a busy host is contended only when nothing
/// else held it back: when requests of the same endpoint waited for a pool's
/// connections (now, or at low load too), the process was idle for want of
/// connections, not of CPU (the host may be busy with the load generator beside
/// it). Its row goes back to `CPU (process)`, not a limit, saying so.
fn uncontend_where_a_pool_waits(rows: &mut [Component]) {
    let pools: Vec<(String, String)> = rows
        .iter()
        .filter(|r| {
            r.kind == Kind::Pool && matches!(r.verdict, Verdict::Yes | Verdict::BusyThroughout)
        })
        .map(|r| (r.endpoint.clone(), r.component.clone()))
        .collect();
    for r in rows.iter_mut().filter(|r| r.kind == Kind::ContendedCpu) {
        if let Some((_, pool)) = pools.iter().find(|(ep, _)| *ep == r.endpoint) {
            r.component = "CPU (process)".into();
            r.kind = Kind::ProcessCpu;
            r.verdict = Verdict::No;
            r.state = r
                .state
                .strip_suffix(", contended")
                .unwrap_or(&r.state)
                .to_string();
            r.evidence = format!(
                "{}; but requests waited for {pool}'s connections, not for CPU",
                r.evidence.replacen("contended: ", "", 1)
            );
        }
    }
}

/// Turn saturated rows that wait on another saturated row into consequences.
/// What waits on what: request threads wait on their process's CPU (used up, or
/// contended: taken by neighbours), heap and GC, on its connection pools and on
/// the databases behind them; a pool waits
/// on its process's CPU and on the databases; a CPU busy collecting garbage or
/// swapping waits on memory. Machine-wide CPU explains nothing by itself: on a
/// shared machine it may be the load generator or a neighbour, so it is listed
/// as a limit of its own beside what it did not cause.
///
/// A pool (or database) that already had requests waiting at low load is busy
/// throughout by its own numbers, and its waiting count cannot grow past the
/// threads that wait on it (4 workers on 2 connections: at most 2 pending). When
/// those threads then fill up with requests queued for them, what changed is
/// the queue in front of the pool: the pool is the limit, and the threads its
/// consequence, rather than the threads being named for a pool they wait on.
/// The same holds for a process's CPU that was as used up at low load: the
/// threads queue for it. Not for a CPU that was as *contended* at low load: a
/// host kept busy by a low-priority job reads as contending every process on
/// it, while the job yields to them; that the host was busy does not show what
/// the threads wait on.
fn explain(rows: &mut [Component]) {
    uncontend_where_a_pool_waits(rows);
    let snapshot: Vec<(Kind, String, String, Verdict)> = rows
        .iter()
        .map(|r| (r.kind, r.component.clone(), r.endpoint.clone(), r.verdict))
        .collect();
    // The first row (by kind) with `verdict` among `kinds`, on `endpoint` when
    // given: its component and endpoint.
    let find_in = |verdict: Verdict, kinds: &[Kind], endpoint: Option<&str>| {
        snapshot
            .iter()
            .filter(|(k, _, ep, v)| {
                *v == verdict && kinds.contains(k) && endpoint.is_none_or(|e| e == ep)
            })
            .min_by_key(|(k, ..)| *k)
            .map(|(_, c, ep, _)| (c.clone(), ep.clone()))
    };
    let find = |kinds: &[Kind], endpoint: Option<&str>| {
        find_in(Verdict::Yes, kinds, endpoint).map(|(c, _)| c)
    };
    let throughout =
        |kinds: &[Kind], endpoint: Option<&str>| find_in(Verdict::BusyThroughout, kinds, endpoint);
    // Busy-throughout rows (component, endpoint) found to be what a changed row
    // waits on: the limit.
    let mut upstream: Vec<(String, String)> = Vec::new();
    for r in rows.iter_mut() {
        if r.verdict != Verdict::Yes {
            continue;
        }
        let ep = Some(r.endpoint.as_str());
        let process = || find(&[Kind::Heap, Kind::Gc, Kind::ProcessCpu], ep);
        let cause = match r.kind {
            Kind::Threads | Kind::Generic | Kind::Fds => process()
                .or_else(|| find(&[Kind::ContendedCpu], ep))
                .or_else(|| find(&[Kind::Pool], ep))
                .or_else(|| find(&[Kind::Backend], None))
                .or_else(|| {
                    let full = throughout(&[Kind::Pool], ep)
                        .or_else(|| throughout(&[Kind::Backend], None))
                        .or_else(|| throughout(&[Kind::Heap, Kind::Gc, Kind::ProcessCpu], ep))?;
                    let component = full.0.clone();
                    upstream.push(full);
                    Some(component)
                }),
            // A pool with requests waiting keeps its own verdict beside a contended
            // CPU: the CPU it lacked does not show that connections were short.
            Kind::Pool => process().or_else(|| find(&[Kind::Backend], None)),
            Kind::ProcessCpu | Kind::ContendedCpu => {
                find(&[Kind::Heap, Kind::Gc], ep).or_else(|| find(&[Kind::Memory], None))
            }
            Kind::MachineCpu => find(&[Kind::Memory], None),
            Kind::Gc => find(&[Kind::Heap], ep),
            _ => None,
        };
        if let Some(c) = cause.filter(|c| *c != r.component) {
            r.verdict = Verdict::Consequence;
            r.evidence = format!("{}; waits on {c}", r.evidence);
        }
    }
    for r in rows.iter_mut().filter(|r| {
        r.verdict == Verdict::BusyThroughout
            && upstream
                .iter()
                .any(|(c, ep)| *c == r.component && *ep == r.endpoint)
    }) {
        r.verdict = Verdict::Yes;
        r.evidence = format!(
            "{}; as full at low load, but what waits on it filled up since: the requests now queued wait for it",
            r.evidence
        );
    }
}

/// The load generator as a row of the table, from its self-check. Only a pado that
/// capped the load (its CPU busy, arrivals behind schedule, VUs waiting on it: see
/// [`crate::self_check::Cap`]) is a limit, listed first: the load offered was less
/// than planned. A pado that was only delayed by a busy machine delivered the load,
/// so it is not a limit; its row says how much scheduling delay the timings may
/// carry. What the target's metrics show is the target's either way, so its rows
/// keep their verdicts.
pub fn generator_component(g: &crate::self_check::GeneratorCheck) -> Component {
    use crate::self_check::{lag_ms, of_cores};
    let mut state = format!(
        "cpu {}, busiest worker {:.0}%",
        of_cores(g.cpu_cores_mean, g.cores_allowed),
        g.busiest_worker_peak.min(1.0) * 100.0
    );
    if let Some(w) = g.run_queue_wait_share {
        state.push_str(&format!(", run-queue wait {:.0}%", w * 100.0));
    }
    state.push_str(&format!(", lag p99 {}", lag_ms(g.lag_p99_ms)));
    let word = g.state_word();
    if !word.is_empty() {
        state.push_str(&format!(" ({word})"));
    }
    Component {
        component: "pado (load generator)".into(),
        kind: Kind::Generator,
        endpoint: "self-check".into(),
        state,
        baseline: None,
        verdict: if g.saturated {
            Verdict::Yes
        } else {
            Verdict::No
        },
        evidence: if g.saturated {
            g.message.clone()
        } else if g.delayed {
            format!(
                "delivered the load; the timings may carry up to {} of scheduling delay",
                lag_ms(g.scheduling_delay_ms)
            )
        } else {
            "had headroom: the figures measure the target".into()
        },
        utilisation: Some(g.busiest_worker_peak.min(1.0)),
    }
}

#[cfg(test)]
mod tests;

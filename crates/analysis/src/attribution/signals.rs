//! The time series the report charts beside the load: for every endpoint the
//! handful of signals the attribution reads (CPU, pools, threads, GC, heap,
//! backends), as levels or per-second rates at each scrape, plus the raw series
//! behind rows the generic rules flagged.

use std::collections::BTreeMap;

use pado_results::{Observations, ObservedSeries};
use serde::{Deserialize, Serialize};

use super::window_math::increase;
use super::{Attribution, Kind};

/// What a signal's values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// 0–100.
    Percent,
    /// A count (connections, threads, queued requests).
    Count,
    /// Per second.
    PerSecond,
}

/// One charted line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// Endpoint.
    pub endpoint: String,
    /// Line name (`CPU (process)`, `DB pool HikariPool-1 pending`).
    pub name: String,
    /// Unit of the values.
    pub unit: Unit,
    /// `(t, value)` at each scrape.
    pub points: Vec<(f64, f64)>,
}

fn rate_points(s: &ObservedSeries) -> Vec<(f64, f64)> {
    s.points
        .windows(2)
        .filter(|p| p[1].0 > p[0].0)
        .map(|p| (p[1].0, increase(p[0].1, p[1].1) / (p[1].0 - p[0].0)))
        .collect()
}

/// Add point-wise (series of one endpoint share scrape times).
fn add(acc: &mut BTreeMap<u64, (f64, f64)>, pts: &[(f64, f64)]) {
    for (t, v) in pts {
        acc.entry(t.to_bits()).or_insert((*t, 0.0)).1 += v;
    }
}

fn collect(acc: BTreeMap<u64, (f64, f64)>) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = acc.into_values().collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

fn scaled(pts: &[(f64, f64)], k: f64) -> Vec<(f64, f64)> {
    pts.iter().map(|(t, v)| (*t, v * k)).collect()
}

/// Every signal of `obs`; `att` adds the series behind generic rows.
pub fn signals(obs: &Observations, att: Option<&Attribution>) -> Vec<Signal> {
    let mut out = Vec::new();
    for e in &obs.endpoints {
        let ep = e.name.as_str();
        let mut of = EndpointSignals {
            ep,
            mine: obs.series.iter().filter(|s| s.endpoint == ep).collect(),
            out: &mut out,
        };
        of.cpu();
        of.machine();
        of.pools();
        of.datastores();
    }
    if let Some(a) = att {
        for c in a.components.iter().filter(|c| c.kind == Kind::Generic) {
            if let Some(s) = obs.series.iter().find(|s| {
                s.endpoint == c.endpoint && super::generic::display_name(s) == c.component
            }) {
                if s.points.len() >= 2 {
                    out.push(Signal {
                        endpoint: s.endpoint.clone(),
                        name: c.component.clone(),
                        unit: Unit::Count,
                        points: s.points.clone(),
                    });
                }
            }
        }
    }
    out
}

/// The series one endpoint exposes, read into the signals the table shows (each with
/// at least two points, so it can be drawn).
struct EndpointSignals<'a, 'o> {
    ep: &'a str,
    mine: Vec<&'a ObservedSeries>,
    out: &'o mut Vec<Signal>,
}

impl<'a> EndpointSignals<'a, '_> {
    /// The endpoint's series called `n`.
    fn named(&self, n: &str) -> Vec<&'a ObservedSeries> {
        self.mine.iter().copied().filter(|s| s.name == n).collect()
    }

    /// A signal, kept when it has something to draw.
    fn push(&mut self, name: String, unit: Unit, points: Vec<(f64, f64)>) {
        if points.len() >= 2 {
            self.out.push(Signal {
                endpoint: self.ep.to_string(),
                name,
                unit,
                points,
            });
        }
    }

    /// The process's CPU use.
    fn cpu(&mut self) {
        let cores = self
            .named("system_cpu_count")
            .first()
            .and_then(|s| s.points.last())
            .map(|p| p.1);
        // As the table reads it: CPU time per second over the CPUs the process may
        // use, before Micrometer's gauge (a share of all the host's CPUs).
        let time = self
            .named("process_cpu_time_ns_total")
            .first()
            .map(|c| (*c, 1e-9))
            .or_else(|| {
                self.named("process_cpu_seconds_total")
                    .first()
                    .map(|c| (*c, 1.0))
            });
        match (time, cores.filter(|n| *n > 0.0)) {
            (Some((c, k)), Some(n)) => self.push(
                "CPU (process)".into(),
                Unit::Percent,
                scaled(&rate_points(c), 100.0 * k / n),
            ),
            _ => {
                if let Some(g) = self.named("process_cpu_usage").first() {
                    self.push(
                        "CPU (process)".into(),
                        Unit::Percent,
                        scaled(&g.points, 100.0),
                    );
                }
            }
        }
    }

    /// The machine's CPU, load and the JVM's time in GC.
    fn machine(&mut self) {
        let idle: Vec<_> = self
            .named("node_cpu_seconds_total")
            .into_iter()
            .filter(|s| s.label("mode") == "idle")
            .collect();
        if !idle.is_empty() {
            let n = idle.len() as f64;
            let mut acc = BTreeMap::new();
            for s in &idle {
                add(&mut acc, &rate_points(s));
            }
            let busy = collect(acc)
                .into_iter()
                .map(|(t, v)| (t, ((1.0 - v / n) * 100.0).clamp(0.0, 100.0)))
                .collect();
            self.push("CPU (machine)".into(), Unit::Percent, busy);
        } else if let Some(g) = self.named("system_cpu_usage").first() {
            self.push(
                "CPU (machine)".into(),
                Unit::Percent,
                scaled(&g.points, 100.0),
            );
        }
        if let Some(l) = self.named("node_load1").first() {
            self.push("load1".into(), Unit::Count, l.points.clone());
        }
        let gc = self.named("jvm_gc_pause_seconds_sum");
        if !gc.is_empty() {
            let mut acc = BTreeMap::new();
            for s in &gc {
                add(&mut acc, &rate_points(s));
            }
            self.push(
                "GC (% of time)".into(),
                Unit::Percent,
                scaled(&collect(acc), 100.0),
            );
        }
    }

    /// Pools of connections and threads: busy, and waiting where the pool says.
    fn pools(&mut self) {
        for (busy, queue, label, display) in [
            (
                "hikaricp_connections_active",
                "hikaricp_connections_pending",
                "pool",
                "DB pool",
            ),
            (
                "executor_active_threads",
                "executor_queued_tasks",
                "name",
                "Worker pool",
            ),
            ("tomcat_threads_busy_threads", "", "name", "Tomcat threads"),
            (
                "jetty_threads_busy",
                "jetty_threads_jobs",
                "",
                "Jetty threads",
            ),
        ] {
            for s in self.named(busy) {
                let key = if label.is_empty() { "" } else { s.label(label) };
                let base = if key.is_empty() {
                    display.to_string()
                } else {
                    format!("{display} {key}")
                };
                self.push(format!("{base} busy"), Unit::Count, s.points.clone());
                if let Some(q) = self
                    .named(queue)
                    .into_iter()
                    .find(|q| label.is_empty() || q.label(label) == key)
                {
                    self.push(format!("{base} waiting"), Unit::Count, q.points.clone());
                }
            }
        }
    }

    /// The data stores' own gauges and rates (MySQL, Redis, nginx).
    fn datastores(&mut self) {
        for (n, name) in [
            (
                "mysql_global_status_threads_running",
                "MySQL threads running",
            ),
            ("redis_connected_clients", "Redis clients"),
            ("nginx_connections_active", "nginx active connections"),
        ] {
            if let Some(s) = self.named(n).first() {
                self.push(name.into(), Unit::Count, s.points.clone());
            }
        }
        if let Some(s) = self.named("redis_commands_processed_total").first() {
            self.push("Redis ops/s".into(), Unit::PerSecond, rate_points(s));
        }
    }
}

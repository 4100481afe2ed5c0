//! k6's end-of-test summary object, built from a result directory only: the `data`
//! a k6 script's `handleSummary(data)` receives (and `k6 run --summary-export`
//! writes), so that a script's own summary logic, and every tool that reads k6's
//! summary, works on a pado run unchanged.
//!
//! The shape is k6's (`metrics`, `root_group`, `options`, `state`):
//!
//! - `metrics`: each metric that has data, by k6's name, with its `type` (`counter`,
//!   `gauge`, `rate`, `trend`), what it `contains` (`time`, `data`, `default`) and
//!   its `values` under k6's keys: `count`/`rate` for counters, `rate`/`passes`/
//!   `fails` for rates, `value`/`min`/`max` for gauges, and for trends the
//!   statistics of `summaryTrendStats` (k6's default: avg, min, med, max, p(90),
//!   p(95)); times in milliseconds. A metric with thresholds carries
//!   `thresholds: {expression: {ok}}`; a threshold on a sub-metric
//!   (`http_req_duration{step:login}`) gets that sub-metric's own entry, as in k6.
//! - `root_group`: k6's group tree (`name`, `path`, `id` = the MD5 of the path,
//!   `groups`, `checks` with `passes` and `fails`). A check whose name is a k6 path
//!   (`::group::check`) sits in its groups; any other check at the root.
//! - `options` (`summaryTrendStats`, `summaryTimeUnit`, `noColor`) and `state`
//!   (`isStdOutTTY`, `isStdErrTTY`, `testRunDurationMs`).
//!
//! Every figure is the one pado's own thresholds judge (the same
//! [`TotalsSource`]), so a script's summary never disagrees with the run's verdict.

use std::collections::BTreeMap;

use md5::{Digest, Md5};
use pado_analysis::metric_catalog::{self, MetricKind};
use pado_analysis::thresholds::{parse_metric_key, Aggregation, MetricSource};
use pado_analysis::TotalsSource;
use pado_metrics::{LatencyHistogram, Phase};
use pado_results::ResultDir;
use serde_json::{json, Map, Value};

use crate::summary::{build, load, LoadedRun, ReportError};

/// k6's default `summaryTrendStats`.
pub const DEFAULT_TREND_STATS: [&str; 6] = ["avg", "min", "med", "max", "p(90)", "p(95)"];

/// What k6 reads from its options and the terminal for the summary: which trend
/// statistics to give, the time unit, colours, and whether stdout/stderr are
/// terminals (a script's `handleSummary` may format differently for each).
#[derive(Clone, Debug, PartialEq)]
pub struct K6SummaryOptions {
    /// `summaryTrendStats`: `avg`, `min`, `med`, `max`, `count`, `p(N)`.
    pub trend_stats: Vec<String>,
    /// `summaryTimeUnit` (`""`: k6 picks one per value).
    pub time_unit: String,
    /// `noColor`.
    pub no_color: bool,
    /// `state.isStdOutTTY`.
    pub stdout_tty: bool,
    /// `state.isStdErrTTY`.
    pub stderr_tty: bool,
}

impl Default for K6SummaryOptions {
    fn default() -> Self {
        K6SummaryOptions {
            trend_stats: DEFAULT_TREND_STATS.iter().map(|s| s.to_string()).collect(),
            time_unit: String::new(),
            no_color: false,
            stdout_tty: false,
            stderr_tty: false,
        }
    }
}

/// Why k6's summary object could not be built.
#[derive(Debug, thiserror::Error)]
pub enum K6SummaryError {
    /// The result directory could not be read or summarised.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// A `summaryTrendStats` entry k6 would refuse too, in k6's words (with what
    /// pado accepts).
    #[error("summaryTrendStats: {0} (use avg, min, med, max, count or p(N) with N from 0 to 100)")]
    TrendStat(String),
    /// A `summaryTimeUnit` k6 would refuse too, in k6's words.
    #[error("summaryTimeUnit: invalid summary time unit '{0}', use 's', 'ms' or 'us'")]
    TimeUnit(String),
}

impl K6SummaryOptions {
    /// Judge the options as k6 does at start: each `summaryTrendStats` entry and
    /// the `summaryTimeUnit`, so a typo stops the run before it starts, not after.
    pub fn check(&self) -> Result<(), K6SummaryError> {
        for s in &self.trend_stats {
            TrendStat::parse(s)?;
        }
        if !matches!(self.time_unit.as_str(), "" | "s" | "ms" | "us") {
            return Err(K6SummaryError::TimeUnit(self.time_unit.clone()));
        }
        Ok(())
    }
}

/// k6's summary object of the run in `dir`, with k6's default options.
pub fn data(dir: &ResultDir) -> Result<Value, K6SummaryError> {
    data_with(dir, &K6SummaryOptions::default())
}

/// k6's summary object of the run in `dir`, with the script's options.
pub fn data_with(dir: &ResultDir, opts: &K6SummaryOptions) -> Result<Value, K6SummaryError> {
    let run = load(dir)?;
    from_run(&run, opts)
}

/// k6's summary object of a loaded run.
pub fn from_run(run: &LoadedRun, opts: &K6SummaryOptions) -> Result<Value, K6SummaryError> {
    opts.check()?;
    let stats = opts
        .trend_stats
        .iter()
        .map(|s| TrendStat::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let summary = build(run)?;
    let dur = run.meta.duration_s.max(1e-9);
    let source = TotalsSource::new(&run.totals, dur).with_steps(&run.meta.steps);
    let m = Metrics {
        run,
        source: &source,
        stats: &stats,
        names: &opts.trend_stats,
    };
    crate::summary::custom::declare(&run.totals);
    let mut metrics = m.built_in();
    for (name, v) in m.custom() {
        metrics.entry(name).or_insert(v);
    }
    // Thresholds: on their metric's entry, a sub-metric's made as k6 makes it.
    for r in &summary.thresholds {
        if !metrics.contains_key(&r.metric) {
            let made = m.sub_metric(&r.metric);
            metrics.insert(r.metric.clone(), made);
        }
        if let Some(obj) = metrics.get_mut(&r.metric).and_then(Value::as_object_mut) {
            let th = obj
                .entry("thresholds")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(th) = th.as_object_mut() {
                th.insert(r.expr.clone(), json!({ "ok": r.ok }));
            }
        }
    }
    Ok(json!({
        "root_group": root_group(run),
        "options": {
            "summaryTrendStats": opts.trend_stats,
            "summaryTimeUnit": opts.time_unit,
            "noColor": opts.no_color,
        },
        "state": {
            "isStdOutTTY": opts.stdout_tty,
            "isStdErrTTY": opts.stderr_tty,
            "testRunDurationMs": run.meta.duration_s * 1000.0,
        },
        "metrics": metrics,
    }))
}

/// One statistic of `summaryTrendStats`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TrendStat {
    /// A statistic a threshold could ask for too.
    Agg(AggregationKind),
    /// `count`: how many values.
    Count,
}

/// The trend aggregations (a copyable mirror of [`Aggregation`]'s trend cases).
#[derive(Clone, Copy, Debug, PartialEq)]
enum AggregationKind {
    Avg,
    Min,
    Med,
    Max,
    Percentile(f64),
}

impl TrendStat {
    /// k6's spelling: `avg`, `min`, `med`, `max`, `count`, `p(N)` with 0 ≤ N ≤ 100;
    /// anything else refused with k6's own message.
    fn parse(s: &str) -> Result<TrendStat, K6SummaryError> {
        use AggregationKind as A;
        Ok(match s {
            "avg" => TrendStat::Agg(A::Avg),
            "min" => TrendStat::Agg(A::Min),
            "med" => TrendStat::Agg(A::Med),
            "max" => TrendStat::Agg(A::Max),
            "count" => TrendStat::Count,
            _ => {
                let Some(inner) = s.strip_prefix("p(").and_then(|r| r.strip_suffix(')')) else {
                    return Err(K6SummaryError::TrendStat(format!(
                        "invalid trend stat '{s}', unknown format"
                    )));
                };
                match inner.parse::<f64>() {
                    Ok(n) if (0.0..=100.0).contains(&n) => TrendStat::Agg(A::Percentile(n)),
                    _ => {
                        return Err(K6SummaryError::TrendStat(format!(
                            "invalid percentile trend stat value '{s}', provide a number between 0 and 100"
                        )))
                    }
                }
            }
        })
    }

    fn aggregation(self) -> Option<Aggregation> {
        use AggregationKind as A;
        match self {
            TrendStat::Agg(A::Avg) => Some(Aggregation::Avg),
            TrendStat::Agg(A::Min) => Some(Aggregation::Min),
            TrendStat::Agg(A::Med) => Some(Aggregation::Med),
            TrendStat::Agg(A::Max) => Some(Aggregation::Max),
            TrendStat::Agg(A::Percentile(p)) => Some(Aggregation::Percentile(p)),
            TrendStat::Count => None,
        }
    }
}

/// The figures of one run as k6 metrics.
struct Metrics<'a> {
    run: &'a LoadedRun,
    source: &'a TotalsSource<'a>,
    stats: &'a [TrendStat],
    names: &'a [String],
}

impl Metrics<'_> {
    /// k6's built-in metrics that have data in this run.
    fn built_in(&self) -> BTreeMap<String, Value> {
        let totals = &self.run.totals;
        let all = totals.overall();
        let sc = totals.all_scenarios();
        let mut out = BTreeMap::new();
        let mut put = |name: &str, v: Option<Value>| {
            if let Some(v) = v {
                out.insert(name.to_string(), v);
            }
        };
        let http = all.requests > 0;
        put("http_reqs", http.then(|| self.counter("http_reqs", &[])));
        put(
            "http_req_failed",
            http.then(|| rate(all.failed, all.requests)),
        );
        // k6 times no name resolution of its own (it is inside `http_req_blocked`).
        for p in Phase::ALL.into_iter().filter(|p| *p != Phase::Dns) {
            let h = all.phase(p);
            put(p.metric_name(), (!h.is_empty()).then(|| self.trend(h)));
        }
        put("data_sent", http.then(|| self.counter("data_sent", &[])));
        put(
            "data_received",
            http.then(|| self.counter("data_received", &[])),
        );
        let ran = sc.iterations > 0 || !sc.iteration_duration.is_empty();
        put("iterations", ran.then(|| self.counter("iterations", &[])));
        put(
            "iteration_duration",
            (!sc.iteration_duration.is_empty()).then(|| self.trend(&sc.iteration_duration)),
        );
        put(
            "dropped_iterations",
            (sc.dropped > 0).then(|| self.counter("dropped_iterations", &[])),
        );
        let (passes, fails) = totals
            .checks
            .values()
            .fold((0, 0), |(p, f), c| (p + c.passes, f + c.fails));
        put(
            "checks",
            (passes + fails > 0).then(|| rate(passes, passes + fails)),
        );
        if let Some(w) = all.ws.as_deref().filter(|w| w.sessions > 0) {
            put("ws_sessions", Some(self.counter("ws_sessions", &[])));
            put("ws_msgs_sent", Some(self.counter("ws_msgs_sent", &[])));
            put(
                "ws_msgs_received",
                Some(self.counter("ws_msgs_received", &[])),
            );
            put("ws_connecting", Some(self.trend(&w.connecting)));
            put("ws_session_duration", Some(self.trend(&w.session)));
        }
        let vus: Vec<u32> = self.run.points.iter().map(|p| p.vus).collect();
        let vus_max: Vec<u32> = self.run.points.iter().map(|p| p.vus_max).collect();
        put("vus", Some(gauge(&vus, totals.vus_peak)));
        put("vus_max", Some(gauge(&vus_max, totals.vus_max_peak)));
        out
    }

    /// A counter's `count` and `rate` (per second of the run).
    fn counter(&self, metric: &str, tags: &[(String, String)]) -> Value {
        let count = self.source.aggregate(metric, tags, &Aggregation::Count);
        let rate = self.source.aggregate(metric, tags, &Aggregation::Rate);
        json!({
            "type": "counter",
            "contains": contains(metric),
            "values": { "count": count.unwrap_or(0.0), "rate": rate.unwrap_or(0.0) },
        })
    }

    /// A trend's statistics, in milliseconds, from its histogram (microseconds).
    fn trend(&self, h: &LatencyHistogram) -> Value {
        let ms = |us: u64| us as f64 / 1000.0;
        let mut values = Map::new();
        for (stat, name) in self.stats.iter().zip(self.names) {
            use AggregationKind as A;
            let v = match stat {
                TrendStat::Count => h.count() as f64,
                TrendStat::Agg(A::Avg) => h.mean_us() / 1000.0,
                TrendStat::Agg(A::Min) => ms(h.min_us()),
                TrendStat::Agg(A::Med) => ms(h.quantile_us(0.5)),
                TrendStat::Agg(A::Max) => ms(h.max_us()),
                TrendStat::Agg(A::Percentile(p)) => ms(h.quantile_us(p / 100.0)),
            };
            values.insert(name.clone(), json!(v));
        }
        json!({ "type": "trend", "contains": "time", "values": values })
    }

    /// The entry of a sub-metric (`metric{tag:value}`) a threshold names: its values
    /// as the threshold reads them. A metric pado does not know gets its thresholds
    /// only (no type is guessed).
    fn sub_metric(&self, key: &str) -> Value {
        let Ok((name, tags)) = parse_metric_key(key) else {
            return json!({});
        };
        // A script's own metric (group_duration of its groups too).
        if let Some(v) = self.custom_sub(&name, &tags) {
            return v;
        }
        let Some(info) = metric_catalog::lookup(&name) else {
            return json!({});
        };
        let get = |a: &Aggregation| self.source.aggregate(&name, &tags, a);
        let values = match info.kind {
            MetricKind::Counter => return self.counter(&name, &tags),
            MetricKind::Rate => json!({ "rate": get(&Aggregation::Rate).unwrap_or(0.0) }),
            MetricKind::Gauge => {
                let v = get(&Aggregation::Value).unwrap_or(0.0);
                json!({ "value": v, "min": get(&Aggregation::Min).unwrap_or(v), "max": get(&Aggregation::Max).unwrap_or(v) })
            }
            MetricKind::Trend => {
                let mut values = Map::new();
                for (stat, n) in self.stats.iter().zip(self.names) {
                    if let Some(v) = stat.aggregation().and_then(|a| get(&a)) {
                        values.insert(n.clone(), json!(v));
                    }
                }
                Value::Object(values)
            }
        };
        json!({ "type": info.kind.as_str(), "contains": contains(&name), "values": values })
    }
}

/// What a metric's values are: `time` (ms), `data` (bytes) or `default`.
fn contains(metric: &str) -> &'static str {
    match metric_catalog::lookup(metric).map(|i| i.unit) {
        Some("ms") => "time",
        Some("bytes") => "data",
        _ => "default",
    }
}

/// A rate: `passes` of `total` samples were non-zero (for `http_req_failed`, the
/// failed requests: k6 counts a failure as the rate's "pass").
fn rate(passes: u64, total: u64) -> Value {
    let r = if total == 0 {
        0.0
    } else {
        passes as f64 / total as f64
    };
    json!({
        "type": "rate",
        "contains": "default",
        "values": { "rate": r, "passes": passes, "fails": total - passes },
    })
}

/// A gauge over the run's seconds: its last value, smallest and largest (`peak`, the
/// largest any second saw, also between the seconds' samples).
fn gauge(seconds: &[u32], peak: u32) -> Value {
    let value = seconds.last().copied().unwrap_or(0);
    let min = seconds.iter().copied().min().unwrap_or(0);
    let max = seconds.iter().copied().max().unwrap_or(0).max(peak);
    json!({
        "type": "gauge",
        "contains": "default",
        "values": { "value": value, "min": min, "max": max },
    })
}

/// The MD5 of a group's or check's path, in hex: k6's `id`.
fn id_of(path: &str) -> String {
    Md5::digest(path.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One group of the tree being built, its checks and subgroups in first-seen order.
#[derive(Default)]
struct Group {
    name: String,
    path: String,
    groups: Vec<Group>,
    checks: Vec<Value>,
}

impl Group {
    fn child(&mut self, name: &str) -> &mut Group {
        let i = match self.groups.iter().position(|g| g.name == name) {
            Some(i) => i,
            None => {
                self.groups.push(Group {
                    name: name.to_string(),
                    path: format!("{}::{name}", self.path),
                    ..Group::default()
                });
                self.groups.len() - 1
            }
        };
        &mut self.groups[i]
    }

    fn into_value(self) -> Value {
        json!({
            "name": self.name,
            "path": self.path,
            "id": id_of(&self.path),
            "groups": self.groups.into_iter().map(Group::into_value).collect::<Vec<_>>(),
            "checks": self.checks,
        })
    }
}

/// k6's `root_group`: every check of the run with its passes and fails, placed in
/// its groups when its name is a k6 path (`::outer::inner::check`), and every
/// group the script entered (its `group_duration`'s `group` tags) even without
/// checks, as k6 lists it.
fn root_group(run: &LoadedRun) -> Value {
    let mut root = Group::default();
    for c in run
        .totals
        .custom
        .iter()
        .filter(|c| c.key.name == "group_duration")
    {
        let Some((_, path)) = c.key.tags.iter().find(|(k, _)| k == "group") else {
            continue;
        };
        let mut g = &mut root;
        for part in path.strip_prefix("::").unwrap_or(path).split("::") {
            g = g.child(part);
        }
    }
    for (full, c) in &run.totals.checks {
        let (groups, name): (Vec<&str>, &str) = match full.strip_prefix("::") {
            Some(path) => {
                let mut parts: Vec<&str> = path.split("::").collect();
                let name = parts.pop().unwrap_or_default();
                (parts, name)
            }
            None => (Vec::new(), full.as_str()),
        };
        let mut g = &mut root;
        for part in groups {
            g = g.child(part);
        }
        let path = format!("{}::{name}", g.path);
        g.checks.push(json!({
            "name": name,
            "path": path,
            "id": id_of(&path),
            "passes": c.passes,
            "fails": c.fails,
        }));
    }
    root.into_value()
}

mod custom;

#[cfg(test)]
mod tests;

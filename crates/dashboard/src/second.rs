//! One closed second as the page draws it (`Second` of `docs/dashboard.md`): the
//! figures pado already writes to `timeline.jsonl`, summed and turned into
//! percentiles once, when the second closes, so every reader gets the same bytes.
//! Only counts, latencies and the names of steps, checks and error categories
//! appear: nothing of a request's bytes, so no secret can.

use std::collections::BTreeMap;

use pado_metrics::{Phase, SecondRecord, SeriesStats};
use serde::Serialize;

/// One closed second, as the JSON API serves it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Second {
    /// Second of the run (0: the first).
    pub t: u32,
    /// Active VUs at its end.
    pub vus: u32,
    /// Requests completed in it.
    pub requests: u64,
    /// Requests a second (the same figure: a second is one second long).
    pub rps: f64,
    /// Failed requests by category (`http_503`, `timeout`, `check_failed`...).
    pub errors: BTreeMap<String, u64>,
    /// Open model: arrivals that found no free VU.
    pub dropped: u64,
    /// Open model: iterations that started late.
    pub late: u64,
    /// Latency percentiles of every request of the second (absent without one).
    #[serde(flatten)]
    pub latency: Option<Latency>,
    /// Per step (series of one name merged, whatever their tags).
    pub steps: BTreeMap<String, StepSecond>,
    /// The target's own metrics scraped in this second (`observe:`), by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub observed: BTreeMap<String, f64>,
    /// pado's own health in this second (absent when no worker reported it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_check: Option<SelfCheck>,
    /// A distributed run: each generator's share.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub generators: BTreeMap<String, GeneratorShare>,
}

/// Latency percentiles in milliseconds (HDR histograms, exact to their precision).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

/// One step in one second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepSecond {
    /// Requests completed.
    pub count: u64,
    /// Of them, failed.
    pub failures: u64,
    /// Percentiles (absent when no request had a latency).
    #[serde(flatten)]
    pub latency: Option<Latency>,
    /// Checks of this step (`step: what`) that held.
    pub checks_passed: u64,
    /// Checks of this step that did not.
    pub checks_failed: u64,
}

/// pado's own CPU and whether it could deliver the load (the self-check's rules).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SelfCheck {
    /// CPU used, in percent of one core.
    pub cpu_pct: f64,
    /// No worker was saturated, starved of CPU or woken late.
    pub ok: bool,
    /// What was wrong, when something was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One generator's part of a second (a distributed run): what the generators
/// tab draws over the whole run, so a reload shows its history too.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GeneratorShare {
    /// Requests it completed in this second.
    pub requests: u64,
    /// Its part of the second's requests (0–1; absent in a second without any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Its CPU in this second, in percent of one core, if it reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<f64>,
    /// Whether it reported this second (a generator that stalled or left did not).
    pub reporting: bool,
}

/// Milliseconds with microsecond precision.
fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The request-duration percentiles of `s`, if it has any.
fn latency(s: &SeriesStats) -> Option<Latency> {
    let h = s.phase(Phase::Duration);
    if h.is_empty() {
        return None;
    }
    let [p50, p95, p99] = h.quantiles_us([0.50, 0.95, 0.99]);
    Some(Latency {
        p50_ms: ms(p50),
        p95_ms: ms(p95),
        p99_ms: ms(p99),
        max_ms: ms(h.max_us()),
    })
}

impl Second {
    /// The page's view of `r`.
    pub fn of(r: &SecondRecord) -> Second {
        let mut by_step: BTreeMap<&str, SeriesStats> = BTreeMap::new();
        let mut errors = BTreeMap::new();
        for s in &r.series {
            for (k, n) in s.error_breakdown() {
                *errors.entry(k).or_insert(0) += n;
            }
            by_step
                .entry(s.key.name.as_str())
                .or_insert_with(|| SeriesStats::new(pado_metrics::SeriesKey::named(&s.key.name)))
                .merge(s);
        }
        let steps = by_step
            .into_iter()
            .map(|(name, s)| {
                let prefix = format!("{name}: ");
                let (checks_passed, checks_failed) = r
                    .checks
                    .iter()
                    .filter(|(k, _)| k.starts_with(&prefix))
                    .fold((0, 0), |(p, f), (_, c)| (p + c.passes, f + c.fails));
                let step = StepSecond {
                    count: s.requests,
                    failures: s.failed,
                    latency: latency(&s),
                    checks_passed,
                    checks_failed,
                };
                (name.to_string(), step)
            })
            .collect();
        let requests = r.requests();
        Second {
            t: r.t,
            vus: r.vus,
            requests,
            rps: requests as f64,
            errors,
            dropped: r.scenarios.iter().map(|s| s.dropped).sum(),
            late: r.scenarios.iter().map(|s| s.late).sum(),
            latency: latency(&r.overall()),
            steps,
            observed: BTreeMap::new(),
            self_check: r.generator.as_ref().map(|g| self_check(r.t, g)),
            generators: BTreeMap::new(),
        }
    }
}

/// The self-check's per-second rules on one second's generator figures.
fn self_check(t: u32, g: &pado_metrics::GeneratorSecond) -> SelfCheck {
    let s = pado_report::timeline::gen_second(t, g);
    let mut notes = Vec::new();
    if s.is_full() && s.busy() {
        notes.push(format!(
            "a worker was {:.0}% busy: pado may be the bottleneck",
            s.busy_max.min(1.0) * 100.0
        ));
    }
    if s.is_full() && s.starved() {
        notes.push("pado waited for a CPU (other work on this machine)".to_string());
    }
    if s.late() {
        notes.push(format!(
            "pado's event loop woke up {} late",
            pado_analysis::self_check::lag_ms(s.lag_max_ms)
        ));
    }
    SelfCheck {
        cpu_pct: (s.cores * 1000.0).round() / 10.0,
        ok: notes.is_empty(),
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}

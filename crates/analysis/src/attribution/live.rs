//! The bottleneck table while a run goes: the same table the report builds at the
//! end ([`table`], which the report calls too), over the seconds closed so far and
//! the scrapes read so far, and what a live view says of it ([`hint`]): "likely
//! limit: <resource> (<evidence>)" with a confidence, "no limit seen yet", or how
//! much more data it needs before it says anything.
//!
//! Why one function for both: a hint that names another resource than the report
//! of the same run would teach people to distrust both. On the finished run (every
//! second, every scrape) [`hint`] reads exactly the table the report shows.
//!
//! Never a guess on too little: the hint waits for [`MIN_LOADED_SECONDS`] seconds
//! of load and [`MIN_SCRAPES_IN_WINDOW`] scrapes of the target inside the window it
//! reads (with fewer, one slow scrape decides a verdict), and says so.

use std::collections::HashMap;

use pado_metrics::ScrapedSample;
use pado_results::{EndpointLog, Observations, ObservedSeries};
use serde::Serialize;

use super::{attribute, windows, Attribution, Component, Verdict, Window};
use crate::saturation::{self, LoadSample, Saturation};

/// Seconds of load the hint waits for: the saturation analysis needs several
/// levels, and a window of a few seconds is mostly noise.
pub const MIN_LOADED_SECONDS: usize = 10;

/// Scrapes of the target inside the window the hint waits for: with fewer, a
/// level is one reading and a counter's rate one difference.
pub const MIN_SCRAPES_IN_WINDOW: usize = 3;

/// Scrapes inside the window from which a limit at a real saturation point is
/// said with high confidence.
const SURE_SCRAPES: usize = 5;

/// The bottleneck table over `samples` (active VUs, requests and p95 of each
/// second) and `obs`, with the window `sat` picks, and `extra` rows known from
/// elsewhere (the generator's self-check). `None` when nothing was observed or the
/// run had no load. The report's table (`summary.json`'s `bottlenecks`) is this.
pub fn table(
    samples: &[LoadSample],
    sat: Option<&Saturation>,
    obs: &Observations,
    extra: Vec<Component>,
) -> Option<Attribution> {
    if obs.is_empty() {
        return None;
    }
    let (window, baseline, saturated) = windows(samples, sat)?;
    Some(attribute(obs, window, baseline, saturated, extra))
}

/// How sure the hint is of the limit it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// The run reached a saturation point (throughput stopped keeping up) and the
    /// resource was full over at least five scrapes of it.
    High,
    /// Full in the window, but the window is the peak load of a run that has not
    /// (yet) saturated, or it holds only a few scrapes.
    Medium,
    /// As full at low load, when the service still kept up: it may be the limit,
    /// or the limit is not scraped.
    Low,
}

/// What the hint says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HintStatus {
    /// A resource looks like the limit ([`LiveHint::component`]).
    Limit,
    /// Enough data, and nothing observed is full.
    NoLimit,
    /// Too little data to say anything yet ([`LiveHint::needs`]).
    Waiting,
}

/// The live bottleneck hint (see the module's documentation).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LiveHint {
    /// What it says.
    pub status: HintStatus,
    /// In one line, for a person: `likely limit: DB pool HikariPool-1 (app) (…)`,
    /// `no limit seen yet (…)`, `waiting for data: …`.
    pub text: String,
    /// The table's top row when it is a limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<Component>,
    /// How sure, when a limit is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// The seconds the table was read over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// Seconds with load seen so far.
    pub loaded_seconds: usize,
    /// Scrapes of the target inside the window (the most of any endpoint).
    pub scrapes_in_window: usize,
    /// What more it waits for, when it waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
}

/// What a sample's `load` is: it decides whether the knee applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadMeasure {
    /// Active VUs (a closed or mixed run): the windows come from the knee.
    ActiveVus,
    /// The arrival rate an all-open-model run offered ([`crate::offered_load`]):
    /// the knee, found against VUs, does not apply, and the windows come from
    /// the rate, as in the report's table.
    ArrivalRate,
}

/// The hint over the seconds closed so far (`samples`, their load in active VUs;
/// `duration_s`: how long the run has gone, 0 when unknown: a second past it is
/// partial and left out, as the report leaves it) and the target's metrics
/// scraped so far (`obs`). `None` when the run observes nothing (no `observe:`).
pub fn hint(
    samples: &[LoadSample],
    duration_s: f64,
    obs: &Observations,
    extra: Vec<Component>,
) -> Option<LiveHint> {
    hint_by(samples, LoadMeasure::ActiveVus, duration_s, obs, extra)
}

/// [`hint`] over samples whose load is `measure`.
pub fn hint_by(
    samples: &[LoadSample],
    measure: LoadMeasure,
    duration_s: f64,
    obs: &Observations,
    extra: Vec<Component>,
) -> Option<LiveHint> {
    if obs.is_empty() {
        return None;
    }
    let loaded = saturation::full_seconds(samples, duration_s).len();
    let waiting = |needs: String, window: Option<Window>, scrapes: usize| LiveHint {
        status: HintStatus::Waiting,
        text: format!("waiting for data: {needs}"),
        component: None,
        confidence: None,
        window,
        loaded_seconds: loaded,
        scrapes_in_window: scrapes,
        needs: Some(needs),
    };
    if loaded < MIN_LOADED_SECONDS {
        return Some(waiting(
            format!("needs {MIN_LOADED_SECONDS} s of load (has {loaded} s)"),
            None,
            0,
        ));
    }
    let sat = match measure {
        LoadMeasure::ActiveVus => saturation::analyse(samples, duration_s),
        LoadMeasure::ArrivalRate => None,
    };
    let Some(table) = table(samples, sat.as_ref(), obs, extra) else {
        return Some(waiting(
            format!("needs {MIN_LOADED_SECONDS} s of load (has {loaded} s)"),
            None,
            0,
        ));
    };
    let scrapes = scrapes_in(obs, &table.window);
    if scrapes < MIN_SCRAPES_IN_WINDOW {
        return Some(waiting(
            format!(
                "needs {MIN_SCRAPES_IN_WINDOW} scrapes of the target's metrics within {} (has {scrapes})",
                table.window.label
            ),
            Some(table.window),
            scrapes,
        ));
    }
    Some(judge(table, loaded, scrapes))
}

/// The hint a complete enough table gives.
fn judge(table: Attribution, loaded: usize, scrapes: usize) -> LiveHint {
    let top = table
        .components
        .first()
        .filter(|c| matches!(c.verdict, Verdict::Yes | Verdict::BusyThroughout))
        .cloned();
    let window = table.window;
    match top {
        Some(c) => {
            let confidence = match c.verdict {
                Verdict::Yes if table.saturated_run && scrapes >= SURE_SCRAPES => Confidence::High,
                Verdict::Yes => Confidence::Medium,
                _ => Confidence::Low,
            };
            LiveHint {
                status: HintStatus::Limit,
                text: format!(
                    "likely limit: {} ({}) ({}: {}), over {}",
                    c.component, c.endpoint, c.state, c.evidence, window.label
                ),
                component: Some(c),
                confidence: Some(confidence),
                window: Some(window),
                loaded_seconds: loaded,
                scrapes_in_window: scrapes,
                needs: None,
            }
        }
        None => LiveHint {
            status: HintStatus::NoLimit,
            text: format!(
                "no limit seen yet: nothing the target's metrics show was full over {}",
                window.label
            ),
            component: None,
            confidence: None,
            window: Some(window),
            loaded_seconds: loaded,
            scrapes_in_window: scrapes,
            needs: None,
        },
    }
}

/// The most scrapes of one endpoint whose answers fall inside `w` (a series has a
/// point per successful scrape it was in).
fn scrapes_in(obs: &Observations, w: &Window) -> usize {
    let mut most: HashMap<&str, usize> = HashMap::new();
    for s in &obs.series {
        let n = s
            .points
            .iter()
            .filter(|p| p.0 >= w.start_s && p.0 <= w.end_s)
            .count();
        let m = most.entry(s.endpoint.as_str()).or_default();
        *m = (*m).max(n);
    }
    most.into_values().max().unwrap_or(0)
}

/// A series as a scrape names it: endpoint, sample name, labels sorted by name.
type SeriesKey = (String, String, Vec<(String, String)>);

/// The target's metrics as a run's scrapes arrive, in the form `observe.jsonl`
/// is read back in ([`Observations`]), keeping only what the table reads
/// ([`super::wanted`]): a live view builds the same input the report reads.
#[derive(Debug, Default)]
pub struct ObservationsSoFar {
    obs: Observations,
    /// (endpoint, name, labels) → index in `obs.series`.
    index: HashMap<SeriesKey, usize>,
}

impl ObservationsSoFar {
    /// An endpoint scraped (declared once, as `observe.jsonl` declares it).
    pub fn endpoint(&mut self, name: &str) {
        if !self.obs.endpoints.iter().any(|e| e.name == name) {
            self.obs.endpoints.push(EndpointLog {
                name: name.to_string(),
                ..Default::default()
            });
        }
    }

    /// One successful scrape of `endpoint` whose answer arrived `at` seconds after
    /// second 0 ([`pado_results::observed::answered_at`]): a point for every
    /// sample the table reads.
    pub fn scrape(&mut self, endpoint: &str, at: f64, samples: &[ScrapedSample]) {
        self.endpoint(endpoint);
        if let Some(log) = self.obs.endpoints.iter_mut().find(|e| e.name == endpoint) {
            log.scrapes += 1;
            log.samples = samples.len() as u32;
        }
        for s in samples.iter().filter(|s| super::wanted(&s.name)) {
            let mut labels = s.labels.clone();
            labels.sort();
            let key = (endpoint.to_string(), s.name.clone(), labels);
            let i = match self.index.get(&key) {
                Some(i) => *i,
                None => {
                    let i = self.obs.series.len();
                    self.obs.series.push(ObservedSeries {
                        endpoint: endpoint.to_string(),
                        name: s.name.clone(),
                        labels: key.2.iter().cloned().collect(),
                        kind: s.kind,
                        points: Vec::new(),
                    });
                    self.index.insert(key, i);
                    i
                }
            };
            self.obs.series[i].points.push((at, s.value));
        }
    }

    /// What was read so far.
    pub fn observations(&self) -> &Observations {
        &self.obs
    }
}

#[cfg(test)]
mod tests;

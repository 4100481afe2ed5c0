//! Every closed second of the run, kept for the whole run so a reload or a page
//! opened late sees second 0 on, plus what `/api/state` says beside the live
//! figures: the thresholds judged on the seconds so far, failures by category, the
//! changes made from the dashboard. One thread feeds it from the run's
//! subscription; the HTTP server only reads. Each second is serialized once, when
//! it arrives.
//!
//! Memory is bounded: at most [`MAX_SECONDS`] seconds are kept (24 h), and at
//! most [`MAX_BYTES`] of their JSON (a run of very many steps reaches it sooner);
//! older ones are let go, oldest first, and `/api/seconds` then starts later. A
//! page of `/api/seconds` holds at most [`MAX_PAGE`] of them.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use pado_analysis::thresholds;
use pado_analysis::TotalsSource;
use pado_metrics::{SecondRecord, Totals};
use serde::Serialize;

use crate::info::RunInfo;
use crate::second::Second;

/// The most seconds kept: 24 hours of a run.
pub const MAX_SECONDS: usize = 24 * 60 * 60;

/// The most bytes of seconds kept: 24 h of a run of a dozen steps fit.
pub const MAX_BYTES: usize = 256 * 1024 * 1024;

/// The most seconds one answer of `/api/seconds` holds (its `next` says where to
/// go on): an hour, about 1 MB of JSON for a run of a few steps.
pub const MAX_PAGE: usize = 3600;

/// How many failure samples a category keeps for the page.
const SAMPLES_PER_CATEGORY: usize = 3;

/// One threshold judged on the seconds so far.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThresholdNow {
    /// The metric with its tags.
    pub metric: String,
    /// The expression.
    pub expression: String,
    /// Whether it holds now (`false` when the metric has no data yet).
    pub pass: bool,
    /// The value it is judged on, when there is one.
    pub value: Option<f64>,
}

/// Failures of one category.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailureNow {
    /// `http_503`, `timeout`, `check_failed`...
    pub category: String,
    /// The first second it happened in.
    pub first_s: u32,
    /// The last second it happened in.
    pub last_s: u32,
    /// How many requests failed so.
    pub count: u64,
    /// A few of them as `failures.jsonl` has them (URLs scrubbed of secrets).
    pub samples: Vec<serde_json::Value>,
}

/// A change of the load made through the dashboard.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EventNow {
    /// When, in seconds from second 0.
    pub t_s: f64,
    /// `control`.
    pub kind: String,
    /// What changed.
    pub what: String,
}

/// The store (see the module's documentation).
pub struct Store {
    cap: usize,
    max_bytes: usize,
    bytes: usize,
    seconds: VecDeque<(u32, Arc<str>)>,
    totals: Totals,
    thresholds: Vec<ThresholdNow>,
    failures: BTreeMap<String, FailureNow>,
    events: Vec<EventNow>,
}

/// One page of seconds: `{"seconds":[…],"next":N}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Page {
    /// The seconds' JSON, in order.
    pub seconds: Vec<Arc<str>>,
    /// The second to ask for next.
    pub next: u32,
}

impl Page {
    /// The page as JSON text (the seconds are already JSON).
    pub fn to_json(&self) -> String {
        let mut out =
            String::with_capacity(32 + self.seconds.iter().map(|s| s.len() + 1).sum::<usize>());
        out.push_str("{\"seconds\":[");
        for (i, s) in self.seconds.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(s);
        }
        out.push_str("],\"next\":");
        out.push_str(&self.next.to_string());
        out.push('}');
        out
    }
}

impl Store {
    /// An empty store keeping at most `cap` seconds and [`MAX_BYTES`] of them.
    pub fn new(cap: usize, info: &RunInfo) -> Store {
        Store::with_limits(cap, MAX_BYTES, info)
    }

    /// An empty store keeping at most `cap` seconds and `max_bytes` of their JSON
    /// (the newest second is always kept).
    pub fn with_limits(cap: usize, max_bytes: usize, info: &RunInfo) -> Store {
        Store {
            cap: cap.max(1),
            max_bytes,
            bytes: 0,
            seconds: VecDeque::new(),
            totals: Totals::default(),
            thresholds: info
                .threshold_infos()
                .into_iter()
                .map(|t| ThresholdNow {
                    metric: t.metric,
                    expression: t.expression,
                    pass: false,
                    value: None,
                })
                .collect(),
            failures: BTreeMap::new(),
            events: Vec::new(),
        }
    }

    /// Keep one closed second (`second` is its page view, with what the run adds
    /// beside the record: observed metrics, generators) and judge the thresholds
    /// again. Returns the second's JSON.
    pub fn add(&mut self, r: &SecondRecord, second: &Second, info: &RunInfo) -> Arc<str> {
        let json: Arc<str> = serde_json::to_string(second)
            .unwrap_or_else(|_| format!("{{\"t\":{}}}", second.t))
            .into();
        self.bytes += json.len();
        self.seconds.push_back((r.t, json.clone()));
        while self.seconds.len() > self.cap
            || (self.bytes > self.max_bytes && self.seconds.len() > 1)
        {
            if let Some((_, old)) = self.seconds.pop_front() {
                self.bytes -= old.len();
            }
        }
        for (category, n) in &second.errors {
            let f = self
                .failures
                .entry(category.clone())
                .or_insert_with(|| FailureNow {
                    category: category.clone(),
                    first_s: r.t,
                    last_s: r.t,
                    count: 0,
                    samples: Vec::new(),
                });
            f.last_s = r.t;
            f.count += n;
        }
        self.totals.add_second(r);
        let src = TotalsSource::new(&self.totals, f64::from(r.t) + 1.0).with_steps(&info.catalog);
        for (now, th) in self.thresholds.iter_mut().zip(&info.thresholds) {
            // A threshold scoped to a stage or window is judged at the end, over
            // exactly its seconds: shown without a verdict until then.
            if th.scope.is_some() {
                continue;
            }
            let res = thresholds::evaluate_one(th, &src);
            now.pass = res.ok;
            now.value = res.value;
        }
        json
    }

    /// Failure samples (as `failures.jsonl` holds them) added to their categories,
    /// at most a few each.
    pub fn add_samples(&mut self, samples: &[pado_metrics::FailureSample]) {
        for s in samples {
            let Some(f) = self.failures.get_mut(&s.category) else {
                continue;
            };
            if f.samples.len() < SAMPLES_PER_CATEGORY {
                if let Ok(v) = serde_json::to_value(s) {
                    f.samples.push(v);
                }
            }
        }
    }

    /// The samples of `failures.jsonl` once the run has ended, in place of those
    /// seen while it went (the file has them all, in the same order).
    pub fn replace_samples(&mut self, samples: &[pado_metrics::FailureSample]) {
        for f in self.failures.values_mut() {
            f.samples.clear();
        }
        self.add_samples(samples);
    }

    /// Keep a change made through the dashboard.
    pub fn add_event(&mut self, e: EventNow) {
        self.events.push(e);
    }

    /// The thresholds' verdicts as the summary gave them when the run ended.
    pub fn set_thresholds(&mut self, t: Vec<ThresholdNow>) {
        self.thresholds = t;
    }

    /// The seconds from `from` on (at most [`MAX_PAGE`]).
    pub fn page(&self, from: u32) -> Page {
        let start = self.seconds.partition_point(|(t, _)| *t < from);
        let seconds: Vec<Arc<str>> = self
            .seconds
            .iter()
            .skip(start)
            .take(MAX_PAGE)
            .map(|(_, j)| j.clone())
            .collect();
        let next = self
            .seconds
            .get(start + seconds.len().saturating_sub(1))
            .filter(|_| !seconds.is_empty())
            .map_or(from, |(t, _)| t + 1);
        Page { seconds, next }
    }

    /// The thresholds now.
    pub fn thresholds(&self) -> &[ThresholdNow] {
        &self.thresholds
    }

    /// Failures by category.
    pub fn failures(&self) -> Vec<FailureNow> {
        self.failures.values().cloned().collect()
    }

    /// Changes made through the dashboard.
    pub fn events(&self) -> &[EventNow] {
        &self.events
    }

    /// How many seconds are kept.
    pub fn len(&self) -> usize {
        self.seconds.len()
    }

    /// Whether no second arrived yet.
    pub fn is_empty(&self) -> bool {
        self.seconds.is_empty()
    }
}

/// The thresholds as `summary.json` judged them at the end (scoped ones included,
/// over exactly their seconds).
pub fn thresholds_of_summary(list: &[serde_json::Value]) -> Vec<ThresholdNow> {
    list.iter()
        .map(|t| ThresholdNow {
            metric: t["metric"].as_str().unwrap_or_default().to_string(),
            expression: t["expr"].as_str().unwrap_or_default().to_string(),
            pass: t["ok"].as_bool().unwrap_or(false),
            value: t["value"].as_f64(),
        })
        .collect()
}

#[cfg(test)]
mod tests;

//! A script's own metrics on a line of `timeline.jsonl` (`"custom": [...]`): each
//! one's name, tags, kind and exact figures, a trend's histogram as base64 V2, so
//! that reading a timeline back (and merging generators' timelines) gives the
//! figures the run measured, exactly.

use serde::{Deserialize, Serialize};

use pado_metrics::{CustomKind, CustomStats, LatencyHistogram, SeriesKey};

/// One [`CustomStats`] as written.
#[derive(Serialize, Deserialize)]
pub(super) struct WireCustom {
    name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<(String, String)>,
    kind: CustomKind,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    time: bool,
    count: u64,
    #[serde(default)]
    nonzero: u64,
    #[serde(default)]
    sum: f64,
    min: f64,
    max: f64,
    #[serde(default)]
    last: f64,
    #[serde(default)]
    last_at_us: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    hist: String,
}

impl WireCustom {
    pub(super) fn from_stats(s: &CustomStats) -> Result<Self, String> {
        Ok(WireCustom {
            name: s.key.name.clone(),
            tags: s.key.tags.clone(),
            kind: s.kind,
            time: s.is_time,
            count: s.count,
            nonzero: s.nonzero,
            sum: s.sum,
            min: s.min,
            max: s.max,
            last: s.last,
            last_at_us: s.last_at_us,
            hist: if s.hist.is_empty() {
                String::new()
            } else {
                s.hist.encode()?
            },
        })
    }

    /// The figures, checked: a metric that added nothing, more non-zero adds than
    /// adds, or a trend whose histogram does not hold its adds is refused.
    pub(super) fn into_stats(self) -> Result<CustomStats, String> {
        let what = || format!("custom metric `{}`", self.name);
        if self.count == 0 {
            return Err(format!("{}: count is 0", what()));
        }
        if self.nonzero > self.count {
            return Err(format!(
                "{}: {} non-zero adds of {}",
                what(),
                self.nonzero,
                self.count
            ));
        }
        if self.min.is_nan() || self.max.is_nan() || self.min > self.max || self.sum.is_nan() {
            return Err(format!(
                "{}: min {}, max {}, sum {} do not describe values",
                what(),
                self.min,
                self.max,
                self.sum
            ));
        }
        let hist = if self.hist.is_empty() {
            LatencyHistogram::new()
        } else {
            LatencyHistogram::decode(&self.hist).map_err(|e| format!("{}: {e}", what()))?
        };
        if self.kind == CustomKind::Trend && hist.count() != self.count {
            return Err(format!(
                "{}: the histogram holds {} values of {}",
                what(),
                hist.count(),
                self.count
            ));
        }
        Ok(CustomStats {
            key: SeriesKey {
                name: self.name,
                tags: self.tags,
            },
            kind: self.kind,
            is_time: self.time,
            count: self.count,
            nonzero: self.nonzero,
            sum: self.sum,
            min: self.min,
            max: self.max,
            last: self.last,
            last_at_us: self.last_at_us,
            hist,
        })
    }
}

/// Every custom metric of a second, as written.
pub(super) fn to_wire(list: &[CustomStats]) -> Result<Vec<WireCustom>, String> {
    list.iter().map(WireCustom::from_stats).collect()
}

/// Every custom metric of a line, checked and sorted by key.
pub(super) fn from_wire(list: Vec<WireCustom>) -> Result<Vec<CustomStats>, String> {
    let mut out = list
        .into_iter()
        .map(WireCustom::into_stats)
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

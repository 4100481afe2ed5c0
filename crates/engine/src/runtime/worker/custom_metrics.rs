//! A script's own metrics on one worker (k6's `Counter`, `Gauge`, `Rate`,
//! `Trend`, and `group_duration`): each add goes into this worker's figures of
//! the current second, like a request into its series, and leaves with the
//! second's [`pado_metrics::Interval`]. No lock and, after a metric's first add
//! on the worker, no allocation: an add names its metric by number, its tags are
//! looked up through a reused key.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

use pado_metrics::{CustomStats, SeriesKey};

use super::{WorkerCtx, TAG_SERIES_CAP};
use crate::script::ScriptMetric;

/// Where each of a script's metrics is kept on this worker.
#[derive(Default)]
pub(super) struct CustomNames {
    /// By metric id: what the script declared (read from its host once).
    info: Vec<Option<ScriptMetric>>,
    /// By metric id: the index of its untagged figures.
    plain: Vec<Option<u32>>,
    /// Tagged figures: (id, tags) rendered → index.
    tagged: HashMap<String, u32>,
    /// Scratch for a tagged key.
    key: String,
}

impl WorkerCtx {
    /// Add `value` with `tags` to the script's metric `id`, at `now`. An id the
    /// script never declared is ignored (the script's own module hands them out).
    /// Past [`TAG_SERIES_CAP`] tag sets on this worker, further adds are kept
    /// under the metric's untagged figures.
    pub(in crate::runtime) fn script_metric(
        &self,
        id: u32,
        value: f64,
        tags: &[(String, String)],
        now: Instant,
    ) {
        self.roll_to(now);
        let at_us = now.saturating_duration_since(self.t0).as_micros() as u64;
        let mut names = self.script_names.borrow_mut();
        let c = &mut names.custom;
        let i = id as usize;
        if c.info.len() <= i {
            c.info.resize(i + 1, None);
            c.plain.resize(i + 1, None);
        }
        if c.info[i].is_none() {
            let Some(info) = self.plan.script.as_ref().and_then(|s| s.0.metric(id)) else {
                return;
            };
            c.info[i] = Some(info);
        }
        let mut m = self.metrics.borrow_mut();
        let make = |m: &mut Vec<CustomStats>, tags: Vec<(String, String)>| -> u32 {
            let info = c.info[i].as_ref().expect("read above");
            m.push(CustomStats::new(
                SeriesKey {
                    name: info.name.to_string(),
                    tags,
                },
                info.kind,
                info.is_time,
            ));
            (m.len() - 1) as u32
        };
        let idx = if tags.is_empty() || c.tagged.len() >= TAG_SERIES_CAP {
            match c.plain[i] {
                Some(x) => x,
                None => {
                    let x = make(&mut m.custom, Vec::new());
                    c.plain[i] = Some(x);
                    x
                }
            }
        } else {
            let mut key = std::mem::take(&mut c.key);
            key.clear();
            let _ = write!(key, "{id}");
            for (k, v) in tags {
                key.push('\u{1e}');
                key.push_str(k);
                key.push('\u{1f}');
                key.push_str(v);
            }
            let x = match c.tagged.get(key.as_str()) {
                Some(&x) => x,
                None => {
                    let mut sorted = tags.to_vec();
                    sorted.sort();
                    let x = make(&mut m.custom, sorted);
                    c.tagged.insert(key.clone(), x);
                    x
                }
            };
            c.key = key;
            x
        };
        m.custom[idx as usize].add(value, at_us);
    }
}

/// The second's figures of every metric that was added to, each left empty for
/// the next second (same key, kind and unit).
pub(super) fn take_second(v: &mut [CustomStats]) -> Vec<CustomStats> {
    v.iter_mut()
        .filter(|s| !s.is_empty())
        .map(|s| {
            let fresh = CustomStats::new(s.key.clone(), s.kind, s.is_time);
            std::mem::replace(s, fresh)
        })
        .collect()
}

//! Rules for metric families pado does not know by name: a level near its
//! declared maximum (`x_active` beside `x_max`, `x_used` beside `x_limit`, ...)
//! and a waiting count that grew (`*pending*`, `*queue*`, `*waiting*`,
//! `*backlog*`, `*blocked*`). Only rows that show pressure are reported: an
//! exporter has hundreds of families and the table must stay readable.

use std::collections::BTreeMap;

use pado_results::{Observations, ObservedSeries};

use super::known::{BACKED_UP, FULL};
use super::window_math::{level, share_where, Window};
use pado_base::units::short as fmt_short;

use super::{Component, Kind, Verdict};

const LEVEL_WORDS: [&str; 7] = [
    "active", "busy", "used", "in_use", "inuse", "current", "open",
];
const MAX_WORDS: [&str; 6] = ["max", "limit", "capacity", "maximum", "max_size", "size"];
const QUEUE_WORDS: [&str; 6] = [
    "pending", "queue", "queued", "waiting", "backlog", "blocked",
];

/// Names the generic rules may read.
pub fn wanted(name: &str) -> bool {
    if name.ends_with("_bucket")
        || name.ends_with("_sum")
        || name.ends_with("_count")
        || name.ends_with("_created")
    {
        return false;
    }
    let tokens: Vec<&str> = name.split('_').collect();
    tokens.iter().any(|t| {
        LEVEL_WORDS.contains(t) || MAX_WORDS.contains(t) || QUEUE_WORDS.contains(t) || *t == "use"
    })
}

/// Rows found by the generic rules, skipping families [`super::known`] reads
/// and components already in the table.
pub fn components(
    obs: &Observations,
    w: &Window,
    base: Option<&Window>,
    claimed: &[String],
) -> Vec<Component> {
    let mut out = Vec::new();
    let gauges: Vec<&ObservedSeries> = obs
        .series
        .iter()
        .filter(|s| !s.is_monotonic() && !super::known::wanted(&s.name) && wanted(&s.name))
        .collect();
    // Index by (endpoint, name) for the pair rule.
    let mut by_name: BTreeMap<(&str, &str), Vec<&ObservedSeries>> = BTreeMap::new();
    for s in &gauges {
        by_name
            .entry((s.endpoint.as_str(), s.name.as_str()))
            .or_default()
            .push(s);
    }
    for s in &gauges {
        let Some(l) = level(s, w) else { continue };
        let display = display_name(s);
        if claimed.contains(&display) {
            continue;
        }
        // Pair rule: this is a level with a maximum beside it.
        if let Some(max) = partner(s, &by_name)
            .and_then(|m| level(m, w))
            .map(|l| l.last)
        {
            if max <= 0.0 {
                continue;
            }
            let u = l.mean / max;
            let at_max = share_where(s, w, |v| v >= max).unwrap_or(0.0);
            if u < 0.7 && at_max < 0.5 {
                continue;
            }
            let mut c = row(display, s);
            c.utilisation = Some(u);
            c.state = format!(
                "{}/{} ({:.0}%)",
                fmt_short(l.mean),
                fmt_short(max),
                u * 100.0
            );
            let at_base = base.and_then(|b| Some((level(s, b)?, b)));
            c.baseline = at_base.map(|(l, _)| format!("{}/{}", fmt_short(l.mean), fmt_short(max)));
            let full = |l: &super::window_math::Level, win: &Window| {
                l.mean / max >= FULL || share_where(s, win, |v| v >= max).unwrap_or(0.0) >= 0.8
            };
            if full(&l, w) {
                c.verdict = Verdict::Yes;
                c.evidence = "at its maximum (generic rule: level near its max)".into();
            } else {
                c.evidence = "busy but below its maximum (generic rule)".into();
            }
            c.mark_busy_throughout(at_base.is_some_and(|(l, b)| full(&l, b)));
            out.push(c);
            continue;
        }
        // Queue rule.
        let tokens: Vec<&str> = s.name.split('_').collect();
        if !tokens.iter().any(|t| QUEUE_WORDS.contains(t)) {
            continue;
        }
        let b = base.and_then(|b| level(s, b));
        let grew = l.last > l.first + BACKED_UP || b.is_some_and(|b| l.mean > b.mean + BACKED_UP);
        if l.mean < BACKED_UP || !grew {
            continue;
        }
        let mut c = row(display, s);
        c.state = format!(
            "{} waiting on average, up to {}",
            fmt_short(l.mean),
            fmt_short(l.max)
        );
        c.baseline = b.map(|b| format!("{} waiting", fmt_short(b.mean)));
        c.verdict = Verdict::Yes;
        c.evidence = "a queue that grew under load (generic rule)".into();
        out.push(c);
    }
    out
}

pub(crate) fn display_name(s: &ObservedSeries) -> String {
    let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if labels.is_empty() {
        s.name.clone()
    } else {
        format!("{}{{{}}}", s.name, labels.join(","))
    }
}

fn row(component: String, s: &ObservedSeries) -> Component {
    Component {
        component,
        kind: Kind::Generic,
        endpoint: s.endpoint.clone(),
        state: String::new(),
        baseline: None,
        verdict: Verdict::No,
        evidence: String::new(),
        utilisation: None,
    }
}

/// The maximum series for a level series: same endpoint, same labels (or none),
/// name with the level word swapped for a maximum word.
fn partner<'a>(
    s: &ObservedSeries,
    by_name: &BTreeMap<(&str, &str), Vec<&'a ObservedSeries>>,
) -> Option<&'a ObservedSeries> {
    let tokens: Vec<&str> = s.name.split('_').collect();
    let i = tokens.iter().rposition(|t| LEVEL_WORDS.contains(t))?;
    for m in MAX_WORDS {
        for replace_rest in [false, true] {
            let mut t: Vec<&str> = tokens.clone();
            if replace_rest {
                t.truncate(i);
                t.push(m);
            } else {
                t[i] = m;
            }
            let name = t.join("_");
            if let Some(cands) = by_name.get(&(s.endpoint.as_str(), name.as_str())) {
                if let Some(c) = cands.iter().find(|c| c.labels == s.labels) {
                    return Some(c);
                }
                if let Some(c) = cands.iter().find(|c| c.labels.is_empty()) {
                    return Some(c);
                }
            }
        }
    }
    None
}

//! Reading scraped series over a time window: levels (gauges) and rates
//! (counters, reset-aware), as a Grafana panel would show them, but over exactly
//! the seconds the load analysis picked.

use pado_results::ObservedSeries;

/// A span of the run, seconds since second 0 (end exclusive for seconds,
/// inclusive for scrape times).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// What the span is (`saturation (≥ 119 VUs)`, `low load`, `peak load`).
    pub label: String,
    /// Start, s.
    pub start_s: f64,
    /// End, s.
    pub end_s: f64,
}

impl Window {
    /// A window.
    pub fn new(label: impl Into<String>, start_s: f64, end_s: f64) -> Self {
        Window {
            label: label.into(),
            start_s,
            end_s,
        }
    }
}

/// Summary of a gauge's points in a window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    /// Mean of the points.
    pub mean: f64,
    /// Highest point.
    pub max: f64,
    /// First point.
    pub first: f64,
    /// Last point.
    pub last: f64,
    /// Points.
    pub n: usize,
}

/// The points of `s` inside `w`; when fewer than two fall inside (a scrape
/// interval longer than the window), the nearest point on each side joins them.
pub fn points_in<'a>(s: &'a ObservedSeries, w: &Window) -> &'a [(f64, f64)] {
    let p = &s.points;
    let lo = p.partition_point(|x| x.0 < w.start_s);
    let hi = p.partition_point(|x| x.0 <= w.end_s);
    if hi >= lo + 2 {
        return &p[lo..hi];
    }
    let lo = lo.saturating_sub(1);
    let hi = (hi + 1).min(p.len());
    &p[lo..hi.max(lo)]
}

/// Level of a gauge in `w` (finite points only).
pub fn level(s: &ObservedSeries, w: &Window) -> Option<Level> {
    let pts: Vec<f64> = points_in(s, w)
        .iter()
        .map(|x| x.1)
        .filter(|v| v.is_finite())
        .collect();
    if pts.is_empty() {
        return None;
    }
    Some(Level {
        mean: pts.iter().sum::<f64>() / pts.len() as f64,
        max: pts.iter().copied().fold(f64::MIN, f64::max),
        first: pts[0],
        last: pts[pts.len() - 1],
        n: pts.len(),
    })
}

/// How much a counter grew from `a` to `b`, counting a drop as a restart from 0
/// (as Prometheus' `rate()` does).
pub(crate) fn increase(a: f64, b: f64) -> f64 {
    if b >= a {
        b - a
    } else {
        b
    }
}

/// Per-second rate of a counter over `w`, counting a drop as a restart from 0
/// (as Prometheus' `rate()` does).
pub fn rate(s: &ObservedSeries, w: &Window) -> Option<f64> {
    let pts = points_in(s, w);
    if pts.len() < 2 {
        return None;
    }
    let mut inc = 0.0;
    for pair in pts.windows(2) {
        let (a, b) = (pair[0].1, pair[1].1);
        if !a.is_finite() || !b.is_finite() {
            continue;
        }
        inc += increase(a, b);
    }
    let dt = pts[pts.len() - 1].0 - pts[0].0;
    (dt > 0.0).then(|| inc / dt)
}

/// Fraction of the points in `w` for which `pred` holds.
pub fn share_where(s: &ObservedSeries, w: &Window, pred: impl Fn(f64) -> bool) -> Option<f64> {
    let pts = points_in(s, w);
    if pts.is_empty() {
        return None;
    }
    Some(pts.iter().filter(|x| pred(x.1)).count() as f64 / pts.len() as f64)
}

/// Sum of the levels of several series (e.g. heap pools), point by point
/// through their means.
pub fn sum_levels<'a>(
    series: impl Iterator<Item = &'a ObservedSeries>,
    w: &Window,
) -> Option<Level> {
    let mut acc: Option<Level> = None;
    for s in series {
        if let Some(l) = level(s, w) {
            acc = Some(match acc {
                None => l,
                Some(a) => Level {
                    mean: a.mean + l.mean,
                    max: a.max + l.max,
                    first: a.first + l.first,
                    last: a.last + l.last,
                    n: a.n.max(l.n),
                },
            });
        }
    }
    acc
}

/// Sum of the rates of several counters.
pub fn sum_rates<'a>(series: impl Iterator<Item = &'a ObservedSeries>, w: &Window) -> Option<f64> {
    let mut acc = None;
    for s in series {
        if let Some(r) = rate(s, w) {
            *acc.get_or_insert(0.0) += r;
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(points: &[(f64, f64)]) -> ObservedSeries {
        ObservedSeries {
            points: points.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn rate_handles_resets_and_windows() {
        let s = series(&[
            (0.0, 0.0),
            (2.0, 20.0),
            (4.0, 40.0),
            (6.0, 5.0),
            (8.0, 25.0),
        ]);
        let all = Window::new("all", 0.0, 8.0);
        // 20 + 20 + 5 (restart) + 20 over 8 s.
        assert_eq!(rate(&s, &all), Some(65.0 / 8.0));
        let mid = Window::new("mid", 2.0, 4.0);
        assert_eq!(rate(&s, &mid), Some(10.0));
        // A window between two scrapes borrows the neighbours.
        let narrow = Window::new("n", 2.5, 3.5);
        assert_eq!(points_in(&s, &narrow), &[(2.0, 20.0), (4.0, 40.0)]);
        assert_eq!(rate(&s, &narrow), Some(10.0));
    }

    #[test]
    fn level_and_share() {
        let s = series(&[(0.0, 1.0), (1.0, 3.0), (2.0, f64::NAN), (3.0, 8.0)]);
        let w = Window::new("w", 0.0, 3.0);
        let l = level(&s, &w).unwrap();
        assert_eq!(
            (l.mean, l.max, l.first, l.last, l.n),
            (4.0, 8.0, 1.0, 8.0, 3)
        );
        assert_eq!(share_where(&s, &w, |v| v >= 3.0), Some(0.5));
        assert!(level(&series(&[]), &w).is_none());
    }
}

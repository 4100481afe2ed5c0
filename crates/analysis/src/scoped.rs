//! Thresholds scoped to a stage or a time window (`http_req_duration{stage:2}`,
//! `{window:60s-120s}`), judged over exactly those seconds of the timeline.
//!
//! The result directory keeps every second's histograms per step; the seconds of a
//! window are added exactly (histograms add) into the window's own totals, which
//! the same [`TotalsSource`] reads as a whole run's, with the window's seconds as
//! the length rates are per. Second `t` covers `[t, t+1)` and belongs to a window
//! `[a, b)` when its middle `t + 0.5` does, as stage rows and events place seconds.
//! Memory: one run's totals per distinct window, whatever the run's length.

use pado_metrics::{SecondRecord, StepCatalog, Totals};

use crate::thresholds::{evaluate_one, Threshold, ThresholdResult};
use crate::TotalsSource;

/// The seconds of one window, added.
struct Window {
    start_s: f64,
    end_s: f64,
    seconds: u32,
    totals: Totals,
}

/// One pass over a run's seconds gathering the windows scoped thresholds are
/// judged on: feed every second with [`WindowFold::add_second`], then
/// [`WindowFold::evaluate`] each scoped threshold.
#[derive(Default)]
pub struct WindowFold {
    windows: Vec<Window>,
}

impl WindowFold {
    /// A fold of these windows (`[start, end)` in seconds from the run's start);
    /// a window given twice is gathered once.
    pub fn new(windows: impl IntoIterator<Item = (f64, f64)>) -> WindowFold {
        let mut out: Vec<Window> = Vec::new();
        for (start_s, end_s) in windows {
            if !out.iter().any(|w| w.start_s == start_s && w.end_s == end_s) {
                out.push(Window {
                    start_s,
                    end_s,
                    seconds: 0,
                    totals: Totals::default(),
                });
            }
        }
        WindowFold { windows: out }
    }

    /// Whether no window is gathered (no scoped threshold).
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// Fold one second in.
    pub fn add_second(&mut self, rec: &SecondRecord) {
        for w in &mut self.windows {
            if pado_metrics::second_in_window(rec.t, w.start_s, w.end_s) {
                w.seconds += 1;
                w.totals.add_second(rec);
            }
        }
    }

    /// Judges a scoped threshold on its window's seconds (`steps` for the
    /// `scenario`, `method` and `group` tags). A window with no second of the run
    /// (the run ended before it) has no data, so the threshold fails: a threshold
    /// on nothing proves nothing. An unscoped threshold, or one whose window was not
    /// gathered, has no data here either.
    pub fn evaluate(&self, t: &Threshold, steps: &StepCatalog) -> ThresholdResult {
        let window = t
            .scope
            .as_ref()
            .and_then(|s| s.window_s)
            .and_then(|(a, b)| {
                self.windows
                    .iter()
                    .find(|w| w.start_s == a && w.end_s == b && w.seconds > 0)
            });
        match window {
            Some(w) => {
                let src = TotalsSource::new(&w.totals, f64::from(w.seconds)).with_steps(steps);
                evaluate_one(t, &src)
            }
            None => evaluate_one(t, &NoData),
        }
    }
}

/// A source without data.
struct NoData;

impl crate::thresholds::MetricSource for NoData {
    fn aggregate(
        &self,
        _: &str,
        _: &[(String, String)],
        _: &crate::thresholds::Aggregation,
    ) -> Option<f64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thresholds::parse;
    use pado_metrics::{Interval, Phases, RequestSample, SeriesKey, SeriesStats};

    /// Second `t`: 10 requests of step `get` taking `ms` each, `failed` of them failed.
    fn second(t: u32, ms: u64, failed: u64) -> SecondRecord {
        let mut s = SeriesStats::new(SeriesKey::named("get"));
        for i in 0..10 {
            s.record(&RequestSample {
                status: if i < failed { 500 } else { 200 },
                failed: i < failed,
                phases: Phases {
                    duration_us: ms * 1000,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let mut r = SecondRecord::new(t);
        r.absorb(Interval {
            series: vec![s],
            ..Default::default()
        });
        r
    }

    fn scoped(key: &str, expr: &str, window: (f64, f64)) -> Threshold {
        let mut t = parse(key, expr).unwrap();
        t.scope.as_mut().unwrap().window_s = Some(window);
        t
    }

    /// Seconds 0–4 fast (10 ms, no errors), 5–9 slow (300 ms, 2 of 10 failed).
    fn fold(windows: &[(f64, f64)]) -> WindowFold {
        let mut f = WindowFold::new(windows.iter().copied());
        for t in 0..10 {
            let rec = if t < 5 {
                second(t, 10, 0)
            } else {
                second(t, 300, 2)
            };
            f.add_second(&rec);
        }
        f
    }

    #[test]
    fn each_window_is_judged_on_its_own_seconds() {
        let (fast, slow) = ((0.0, 5.0), (5.0, 10.0));
        let f = fold(&[fast, slow, fast]);
        let steps = StepCatalog::default();
        let p95_fast = scoped("http_req_duration{stage:1}", "p(95) < 200", fast);
        let p95_slow = scoped("http_req_duration{stage:2}", "p(95) < 200", slow);
        let fast_r = f.evaluate(&p95_fast, &steps);
        let slow_r = f.evaluate(&p95_slow, &steps);
        assert!(fast_r.ok, "{fast_r:?}");
        assert!((fast_r.value.unwrap() - 10.0).abs() < 0.1, "{fast_r:?}");
        assert!(!slow_r.ok, "{slow_r:?}");
        assert!((slow_r.value.unwrap() - 300.0).abs() < 1.0, "{slow_r:?}");
        assert_eq!(slow_r.window_s, Some([5.0, 10.0]));
        assert_eq!(slow_r.metric, "http_req_duration{stage:2}");

        // Rates are per second of the window: 50 requests in 5 s.
        let rate = scoped("http_reqs{window:5s-10s}", "rate == 10", slow);
        assert!(f.evaluate(&rate, &steps).ok);
        let failed = scoped("http_req_failed{window:5s-10s}", "rate < 0.1", slow);
        let r = f.evaluate(&failed, &steps);
        assert_eq!(r.value, Some(0.2));
        assert!(!r.ok);
        let failed_fast = scoped("http_req_failed{window:0s-5s}", "rate < 0.1", fast);
        assert_eq!(f.evaluate(&failed_fast, &steps).value, Some(0.0));
    }

    #[test]
    fn a_window_the_run_never_reached_fails_with_no_data() {
        let late = (20.0, 30.0);
        let f = fold(&[late]);
        let t = scoped("http_req_duration{window:20s-30s}", "p(95) < 1e9", late);
        let r = f.evaluate(&t, &StepCatalog::default());
        assert!(!r.ok && r.value.is_none(), "{r:?}");
        // A window straddling seconds by their middle: [4.6, 5.4) holds none.
        let between = (4.6, 5.4);
        let f = fold(&[between]);
        let t = scoped("http_reqs{window:4600ms-5400ms}", "count >= 0", between);
        assert_eq!(f.evaluate(&t, &StepCatalog::default()).value, None);
    }
}

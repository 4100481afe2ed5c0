//! Per-stage figures: the seconds of each stage window of `run.json` merged exactly
//! (histograms add), for the HTML report's stage table and the terminal summary.

use std::collections::BTreeMap;

use pado_metrics::{LatencySummary, Phase};
use pado_results::StageMark;
use serde::{Deserialize, Serialize};

use crate::summary::LoadedRun;
use crate::timeline::Tally;

/// What happened during one stage window (`meta.stages[i]`), over all series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageStats {
    /// Scenario the stage belongs to.
    pub scenario: String,
    /// Position within the scenario's stages (0-based).
    pub index: usize,
    /// Human label of the stage (`ramp 0→100 VUs`).
    pub label: String,
    /// Stage target (VUs or iterations per second).
    pub target: f64,
    /// Window start, seconds from run start.
    pub start_s: f64,
    /// Window end, seconds from run start.
    pub end_s: f64,
    /// Timeline seconds merged: second `t` (covering `[t, t+1)`) belongs to the stage
    /// whose window contains its midpoint `t + 0.5`, so back-to-back stages split the
    /// timeline without counting a second twice. Fewer than the window's length when
    /// the run ended early.
    pub seconds: u32,
    /// Requests completed in the window. Requests completed after the last stage
    /// (the graceful stop's tail, teardown) have a row of their own, labelled
    /// [`crate::timeline::GRACEFUL_STOP_ROW`], so the rows of a single-scenario run
    /// add up to the run's requests.
    pub requests: u64,
    /// Failed requests in the window.
    pub failed: u64,
    /// `requests / seconds` (0 when no second was merged).
    pub rps: f64,
    /// `failed / requests` (0 when there were no requests).
    pub error_rate: f64,
    /// `http_req_duration` in ms over the window.
    pub latency_ms: LatencySummary,
    /// Failures by category (`http_<code>`, transport kinds, `check_failed`).
    pub errors: BTreeMap<String, u64>,
    /// Highest active VU count of a merged second.
    pub vus_peak: u32,
}

pub use pado_metrics::second_in_window;

/// One [`StageStats`] per stage of `run.meta.stages`, in that order. With several
/// scenarios, stages overlap in time and each row counts every request of its window
/// (series are not attributed to scenarios in the result format). Computed while the
/// timeline was read ([`crate::timeline::RunFold`]).
pub fn stage_stats(run: &LoadedRun) -> Vec<StageStats> {
    run.stages.clone()
}

/// The seconds of one stage window merged so far: counts and the duration histogram
/// of all series (one accumulator per stage, whatever the length of the run).
#[derive(Default)]
pub(crate) struct StageAcc {
    all: Tally,
    seconds: u32,
    vus_peak: u32,
}

impl StageAcc {
    /// Fold in one second of the window: its active VUs and its series merged.
    pub(crate) fn add(&mut self, vus: u32, second_all: &Tally) {
        self.seconds += 1;
        self.vus_peak = self.vus_peak.max(vus);
        self.all.add(second_all);
    }

    /// Seconds folded in.
    pub(crate) fn seconds(&self) -> u32 {
        self.seconds
    }

    /// The row of stage `st`.
    pub(crate) fn finish(self, st: &StageMark) -> StageStats {
        let all = self.all.into_series();
        let seconds = self.seconds;
        StageStats {
            scenario: st.scenario.clone(),
            index: st.index,
            label: st.label.clone(),
            target: st.target,
            start_s: st.start_s,
            end_s: st.end_s,
            seconds,
            requests: all.requests,
            failed: all.failed,
            rps: pado_base::units::share(all.requests, u64::from(seconds)),
            error_rate: pado_base::units::share(all.failed, all.requests),
            latency_ms: all.phase(Phase::Duration).summary(),
            errors: all.error_breakdown(),
            vus_peak: self.vus_peak,
        }
    }
}

/// Synthetic runs for the tests of this crate's writers.
#[cfg(test)]
pub(crate) mod test_support {
    use pado_metrics::{Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats};
    use pado_results::{RunMeta, StageMark};

    use crate::summary::LoadedRun;

    /// A request with status `status` (failed when >= 400) taking `dur_us`.
    pub(crate) fn sample(status: u16, dur_us: u64) -> RequestSample {
        RequestSample {
            status,
            failed: status >= 400,
            phases: Phases {
                duration_us: dur_us,
                blocked_us: dur_us / 20,
                connecting_us: dur_us / 10,
                sending_us: dur_us / 50,
                waiting_us: dur_us * 8 / 10,
                receiving_us: dur_us / 10,
                ..Default::default()
            },
            bytes_sent: 100,
            bytes_received: 1000,
            ..Default::default()
        }
    }

    /// Series `name` with `n` requests of `status` taking `dur_us` each.
    pub(crate) fn series(name: &str, n: u64, status: u16, dur_us: u64) -> SeriesStats {
        let mut s = SeriesStats::new(SeriesKey::named(name));
        for _ in 0..n {
            s.record(&sample(status, dur_us));
        }
        s
    }

    /// Second `t` with `vus` active VUs and the given series (merged by key).
    pub(crate) fn second(t: u32, vus: u32, series: Vec<SeriesStats>) -> SecondRecord {
        let mut r = SecondRecord::new(t);
        r.absorb(pado_metrics::Interval {
            vus,
            vus_max: vus + 2,
            series,
            ..Default::default()
        });
        r
    }

    /// Fold into `rec` one worker's generator figures: `busy` and `wait` as shares of
    /// a one-second span, and ninety event-loop wake-ups, the last ten `lag_us` late.
    pub(crate) fn with_generator(
        mut rec: SecondRecord,
        busy: f64,
        wait: f64,
        lag_us: u64,
    ) -> SecondRecord {
        let mut g = pado_metrics::GeneratorStats {
            wall_ns: 1_000_000_000,
            cpu_ns: (busy * 1e9) as u64,
            wait_ns: Some((wait * 1e9) as u64),
            ..Default::default()
        };
        for i in 0..90 {
            g.lag.record(if i < 80 { 900 } else { lag_us });
        }
        rec.absorb(pado_metrics::Interval {
            generator: Some(g),
            ..Default::default()
        });
        rec
    }

    /// Run metadata named `name` lasting `duration_s`.
    pub(crate) fn meta(name: &str, duration_s: f64) -> RunMeta {
        RunMeta {
            format: "pado-result".into(),
            version: pado_results::FORMAT_VERSION,
            name: name.into(),
            pado_version: "0.1.0-test".into(),
            started_at: "2025-01-02T03:04:05Z".into(),
            duration_s,
            workers: 2,
            ..Default::default()
        }
    }

    /// A stage window.
    pub(crate) fn stage(index: usize, start_s: f64, end_s: f64, label: &str) -> StageMark {
        StageMark {
            scenario: "default".into(),
            index,
            start_s,
            end_s,
            label: label.into(),
            target: 10.0,
            from: Some(if label.starts_with("ramp") { 0.0 } else { 10.0 }),
        }
    }

    /// A loaded run folded from `seconds` as [`crate::load`] folds a timeline file.
    pub(crate) fn run(meta: RunMeta, seconds: Vec<SecondRecord>) -> LoadedRun {
        LoadedRun::from_seconds(meta, seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn stages_merge_their_seconds() {
        let mut m = meta("stages", 10.0);
        m.stages = vec![stage(0, 0.0, 4.0, "ramp"), stage(1, 4.0, 10.0, "hold")];
        // Seconds 0..4: 10 req each at 1 ms, 1 of them 500; seconds 4..10: 30 req at 5 ms.
        let seconds = (0..10)
            .map(|t| {
                if t < 4 {
                    second(
                        t,
                        t + 1,
                        vec![series("a", 9, 200, 1000), series("a", 1, 500, 1000)],
                    )
                } else {
                    second(t, 8, vec![series("b", 30, 200, 5000)])
                }
            })
            .collect();
        let r = run(m, seconds);
        let st = stage_stats(&r);
        assert_eq!(st.len(), 2);
        assert_eq!(st[0].seconds, 4);
        assert_eq!(st[0].requests, 40);
        assert_eq!(st[0].failed, 4);
        assert!((st[0].rps - 10.0).abs() < 1e-9);
        assert!((st[0].error_rate - 0.1).abs() < 1e-9);
        assert_eq!(st[0].errors["http_500"], 4);
        assert_eq!(st[0].vus_peak, 4);
        assert!((st[0].latency_ms.p95 - 1.0).abs() < 0.01);
        assert_eq!(st[1].seconds, 6);
        assert_eq!(st[1].requests, 180);
        assert!((st[1].rps - 30.0).abs() < 1e-9);
        assert_eq!(st[1].error_rate, 0.0);
        assert!((st[1].latency_ms.p99 - 5.0).abs() < 0.01);
        assert!((st[1].latency_ms.mean - 5.0).abs() < 0.01);
    }

    #[test]
    fn window_membership_uses_midpoints() {
        assert!(second_in_window(0, 0.0, 1.0));
        assert!(!second_in_window(1, 0.0, 1.0));
        assert!(second_in_window(1, 0.6, 2.0));
        assert!(!second_in_window(0, 0.6, 2.0));
        // A run cut short: the stage only covers the seconds that exist.
        let mut m = meta("short", 2.0);
        m.stages = vec![stage(0, 0.0, 60.0, "hold")];
        let r = run(m, vec![second(0, 1, vec![series("a", 5, 200, 100)])]);
        let st = stage_stats(&r);
        assert_eq!(st[0].seconds, 1);
        assert_eq!(st[0].rps, 5.0);
    }
}

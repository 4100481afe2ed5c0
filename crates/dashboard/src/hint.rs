//! The live bottleneck hint: a thread of its own (never the aggregator's, never
//! the store's feed) keeps the load of each closed second and the target's
//! scrapes, and every [`RECOMPUTE`] reads the bottleneck table over them with
//! `pado_analysis::attribution::live::hint`, the function the report's table is
//! built with. When the run has ended it reads them once more, with the run's
//! length as `run.json` has it, so the last hint is the report's table.
//!
//! It reads the run through its own bounded subscriptions: a hint that falls
//! behind loses seconds (counted by the run), it never slows the run or the page.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pado_analysis::attribution::live::{hint_by, LiveHint, LoadMeasure, ObservationsSoFar};
use pado_analysis::offered_load::OfferedLoad;
use pado_analysis::saturation::LoadSample;
use pado_metrics::{Phase, SecondRecord};

use crate::server::Shared;

/// How often the hint is read again while the run goes: the table reads windows
/// of many seconds, so a new one each second would say nothing new.
pub(crate) const RECOMPUTE: Duration = Duration::from_secs(5);

/// Seconds and scrapes the subscriptions hold while the hint is being computed.
const BACKLOG: usize = 256;

/// Points of the target's series the hint keeps; past it the hint stops
/// following the run and says so (the report reads the whole run from
/// `observe.jsonl`). 16 M points are 256 MiB.
const MAX_POINTS: usize = 16 * 1024 * 1024;

/// How long to wait, once the last second is in, for the run's result (its exact
/// length) before the last hint is read without it.
const END_PATIENCE: Duration = Duration::from_secs(30);

/// Start the thread when the run hands out its scrapes (a run without
/// `observe:`, or one whose scrapes are not seen here, gets no hint).
pub(crate) fn start(shared: Arc<Shared>) -> std::io::Result<()> {
    let Some(scrapes) = shared.run.subscribe_observed(BACKLOG) else {
        return Ok(());
    };
    let sub = shared.run.subscribe(BACKLOG);
    std::thread::Builder::new()
        .name("pado-dashboard-hint".into())
        .spawn(move || {
            let mut seen = Seen::new(shared.info.offered.clone());
            let mut last = Instant::now();
            for r in sub {
                seen.second(&r);
                seen.scrapes(scrapes.try_iter());
                if last.elapsed() >= RECOMPUTE && !seen.full {
                    last = Instant::now();
                    let h = seen.hint(f64::from(r.t) + 1.0);
                    publish(&shared, h, false);
                }
            }
            // The run has ended: wait for its length, take the last scrapes, read
            // the table as the report does.
            let until = Instant::now() + END_PATIENCE;
            let mut duration = None;
            while Instant::now() < until {
                if let Some(d) = shared.run_duration() {
                    duration = Some(d);
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            seen.scrapes(scrapes.try_iter());
            let d = duration.unwrap_or(seen.samples.last().map_or(0.0, |s| f64::from(s.t) + 1.0));
            publish(&shared, seen.hint(d), true);
        })?;
    Ok(())
}

/// Show `h` (`last`: read over the whole run, once it has ended).
fn publish(shared: &Shared, h: Option<LiveHint>, last: bool) {
    *pado_base::lock(&shared.hint) = h.map(|h| (h, last));
    shared.changed();
}

/// What the hint reads: each second's load, and the scrapes so far.
#[derive(Default)]
struct Seen {
    /// How an all-open-model run's second is loaded (its arrivals; else its
    /// active VUs), as the report's table reads it.
    offered: Option<OfferedLoad>,
    samples: Vec<LoadSample>,
    obs: ObservationsSoFar,
    points: usize,
    /// The point budget is spent: the hint no longer follows the run.
    full: bool,
}

impl Seen {
    fn new(offered: Option<OfferedLoad>) -> Seen {
        Seen {
            offered,
            ..Seen::default()
        }
    }

    /// A closed second as the report's bottleneck table reads it: its load (the
    /// arrivals it offered, or active VUs), requests and the p95 of every request
    /// of it.
    fn second(&mut self, r: &SecondRecord) {
        let all = r.overall();
        let h = all.phase(Phase::Duration);
        let p95_ms = (!h.is_empty()).then(|| h.quantiles_us([0.95])[0] as f64 / 1000.0);
        self.samples.push(LoadSample {
            t: r.t,
            load: match &self.offered {
                Some(offered) => {
                    let arrivals = r.scenarios.iter().map(|s| s.arrivals()).sum();
                    offered.of_second(r.t, arrivals)
                }
                None => f64::from(r.vus),
            },
            rps: r.requests() as f64,
            p95_ms,
        });
    }

    fn scrapes(&mut self, scrapes: impl Iterator<Item = Arc<pado_session::ObservedScrape>>) {
        for s in scrapes {
            self.obs.endpoint(&s.endpoint);
            if self.full {
                continue;
            }
            self.points += s.analysed.len();
            if self.points > MAX_POINTS {
                self.full = true;
                continue;
            }
            let at = pado_results::observed::answered_at(s.t, s.ms);
            self.obs.scrape(&s.endpoint, at, &s.analysed);
        }
    }

    fn hint(&self, duration_s: f64) -> Option<LiveHint> {
        let measure = match self.offered {
            Some(_) => LoadMeasure::ArrivalRate,
            None => LoadMeasure::ActiveVus,
        };
        hint_by(
            &self.samples,
            measure,
            duration_s,
            self.obs.observations(),
            Vec::new(),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::RunInfo;

    fn info(load: &str) -> RunInfo {
        let yaml = format!(
            "name: 파도\ntarget: http://127.0.0.1:9\nscenarios:\n  s:\n{load}    flow:\n      - request: /\n"
        );
        let config = pado_scenario::parse_str(&yaml, "t.yaml").expect("scenario");
        let plan = pado_engine::compile(&config, Path::new(".")).expect("plan");
        RunInfo::from_plan(&plan, &[])
    }

    /// Second `t` of a run with `vus` active VUs.
    fn second(t: u32, vus: u32) -> SecondRecord {
        SecondRecord {
            vus,
            ..SecondRecord::new(t)
        }
    }

    /// Second `t` of an open-model run whose scenario `s` started `started`
    /// arrivals and dropped `dropped`, with `vus` active VUs.
    fn arrivals(t: u32, vus: u32, started: u64, dropped: u64) -> SecondRecord {
        SecondRecord {
            scenarios: vec![pado_metrics::ScenarioStats {
                started,
                dropped,
                ..pado_metrics::ScenarioStats::new("s")
            }],
            ..second(t, vus)
        }
    }

    /// The load of an open-model second is what it offered, counted: a rate set
    /// by hand (60 where the plan says 20) and a pause (nothing) read as they
    /// were, never as the plan's 20 nor as the VUs the target's latency piled up.
    #[test]
    fn an_open_model_second_is_loaded_at_its_arrivals_not_its_plan_or_vus() {
        let i = info("    executor: constant-arrival-rate\n    rate: 20\n    duration: 30s\n    max_vus: 500\n");
        assert_eq!(i.offered, Some(OfferedLoad::Counted));
        let mut seen = Seen::new(i.offered.clone());
        for r in [
            arrivals(0, 2, 20, 0),
            arrivals(8, 3, 60, 0),
            arrivals(12, 40, 0, 0),
            arrivals(20, 500, 45, 15),
        ] {
            seen.second(&r);
        }
        let loads: Vec<f64> = seen.samples.iter().map(|s| s.load).collect();
        assert_eq!(
            loads,
            [20.0, 60.0, 0.0, 60.0],
            "each second's arrivals, started or dropped"
        );
    }

    #[test]
    fn a_closed_model_second_is_loaded_at_its_active_vus() {
        let i = info("    executor: constant-vus\n    vus: 20\n    duration: 10s\n");
        assert_eq!(i.offered, None);
        let mut seen = Seen::new(i.offered.clone());
        seen.second(&second(3, 17));
        assert_eq!(seen.samples[0].load, 17.0);
    }
}

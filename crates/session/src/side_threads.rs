//! What runs beside the load on its clock: the target's metrics scrapes
//! (`observe:`) and the scenario's events (`events:`), each on threads of its own,
//! started at second 0 and finished after the load.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use pado_engine::events::{EventPlan, EventRunner, EventsDone, WindowLedger};
use pado_observe::{ObserveConfig, ScrapeTally, Scraper};
use pado_results::events::EventsWriter;
use pado_results::ObserveWriter;

use crate::control::RunHandle;
use pado_base::lock;

/// What was started at second 0.
#[derive(Default)]
struct Started {
    scraper: Option<Scraper>,
    runner: Option<EventRunner>,
    scrape_error: Option<String>,
}

/// The side threads of one run: started once by the engine at second 0.
#[derive(Clone, Default)]
pub(crate) struct SideThreads {
    started: Arc<Mutex<Started>>,
}

/// What the side threads left when they were finished.
pub(crate) struct SideDone {
    /// The scraper's error (it could not start, or writing failed).
    pub scrape_error: Option<String>,
    /// The events' outcome, when there were events.
    pub events: Option<EventsDone>,
}

/// The events to run and where they write.
pub(crate) struct EventsSetup {
    pub plan: EventPlan,
    pub writer: EventsWriter,
    pub ledger: Option<Arc<dyn WindowLedger>>,
}

impl SideThreads {
    /// What the engine calls at second 0 (`None` when nothing runs beside the
    /// load): the scrape loop and the events, a failed required event stopping the
    /// run through `handle`.
    pub(crate) fn on_start(
        &self,
        observe: Option<(ObserveConfig, ObserveWriter)>,
        events: Option<EventsSetup>,
        handle: RunHandle,
        observed: crate::observed_feed::ObservedFeed,
    ) -> Box<dyn FnOnce(Instant) + Send> {
        let started = self.started.clone();
        Box::new(move |t0| {
            handle.started(t0);
            let mut s = lock(&started);
            if let Some((cfg, writer)) = observe {
                let writer = crate::observed_feed::Tee {
                    inner: writer,
                    feed: observed,
                };
                match Scraper::start(cfg, t0, writer) {
                    Ok(sc) => s.scraper = Some(sc),
                    Err(e) => s.scrape_error = Some(format!("could not start scraping: {e}")),
                }
            }
            if let Some(ev) = events {
                let on_failure = Box::new(move |msg: &str| {
                    handle.abort(format!("{msg}: stopping"));
                });
                s.runner = Some(EventRunner::start(
                    ev.plan, t0, ev.writer, on_failure, ev.ledger,
                ));
            }
        })
    }

    /// After the load: one last scrape, open fault windows undone, events not yet
    /// due skipped.
    pub(crate) fn finish(&self) -> SideDone {
        let mut s = lock(&self.started);
        let scraped: Option<ScrapeTally> = s.scraper.take().map(|sc| sc.finish());
        SideDone {
            scrape_error: s
                .scrape_error
                .take()
                .or_else(|| scraped.and_then(|t| t.write_error)),
            events: s.runner.take().map(|r| r.finish()),
        }
    }
}

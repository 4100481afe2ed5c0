//! Each closed second to everyone who takes it, on the aggregator's thread: the
//! live outputs (handed over without waiting), the timeline file, the live judge
//! (which may stop the run), the run's handle (its state and subscribers) and the
//! caller's watcher (the progress line).

use std::sync::{Arc, OnceLock};

use pado_metrics::{SecondRecord, Totals};
use pado_results::result_dir::TimelineWriter;

use crate::config::Watcher;
use crate::control::RunHandle;
use crate::judge::LiveJudge;

/// The receivers of a run's seconds.
pub(crate) struct Fanout {
    pub(crate) outputs: Option<Arc<pado_outputs::Outputs>>,
    pub(crate) timeline: TimelineWriter,
    pub(crate) judge: LiveJudge,
    pub(crate) handle: RunHandle,
    pub(crate) watcher: Option<Box<dyn Watcher>>,
    /// The first failure to write the timeline, said in the run's warnings.
    pub(crate) write_error: Arc<OnceLock<String>>,
    /// The failure samples so far, for a live view.
    pub(crate) failures: crate::live::LiveFailures,
}

impl Fanout {
    /// One closed second with the totals so far.
    pub(crate) fn second(&mut self, r: &SecondRecord, totals: &Totals) {
        if let Some(o) = self.outputs.as_deref() {
            o.send(r);
        }
        if let Err(e) = self.timeline.write(r) {
            let _ = self.write_error.set(e.to_string());
        }
        let (failing, stop_now) = self.judge.judge(r.t, totals);
        if let Some(why) = stop_now {
            self.handle.abort(format!("{why}: stopping"));
        }
        self.failures.catch_up(&totals.failures);
        self.handle.closed(r, failing);
        if let Some(w) = self.watcher.as_mut() {
            w.second(r, totals, failing);
        }
    }

    /// The engine's sink.
    pub(crate) fn into_sink(mut self) -> pado_metrics::aggregator::Sink {
        Box::new(move |r, totals| self.second(r, totals))
    }
}

impl Drop for Fanout {
    /// The aggregator drops its sink when the load has ended: the watcher ends its
    /// line.
    fn drop(&mut self) {
        if let Some(w) = self.watcher.as_mut() {
            w.finish();
        }
    }
}

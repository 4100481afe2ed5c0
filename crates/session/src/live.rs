//! What a live view (the dashboard) watches and steers, whether the run is one
//! process ([`crate::RunHandle`]) or a test split over generators (the agent
//! coordinator, `pado k8s run`): the closed seconds, the run's state, a change of
//! the load, and each generator's share.

use crate::{ControlCommand, ControlError, RunState, Subscription};

/// One generator's part of a distributed run, as a live view shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GeneratorLive {
    /// The generator's name (an agent's address, a pod's name).
    pub name: String,
    /// Its segment of the test (`0:1/2`), if split.
    pub segment: Option<String>,
    /// Requests it sent in its last closed second (or in the second asked for:
    /// [`LiveRun::generators_at`]).
    pub requests: u64,
    /// Its CPU use in that second, in percent of one core.
    pub cpu_pct: Option<f64>,
    /// Whether it still reports.
    pub reporting: bool,
}

/// A run a live view can watch and steer. Implementations never block the run:
/// subscriptions are bounded and lose seconds rather than wait.
pub trait LiveRun: Send + Sync {
    /// Each closed second from now on (merged over generators in a distributed run).
    fn subscribe(&self, capacity: usize) -> Subscription;
    /// What the run is doing now.
    fn state(&self) -> RunState;
    /// Change the load (in a distributed run: on every generator, split by segment
    /// as planned load is).
    fn apply(&self, cmd: &ControlCommand) -> Result<(), ControlError>;
    /// Each generator's share (empty for a run in one process).
    fn generators(&self) -> Vec<GeneratorLive> {
        Vec::new()
    }
    /// Each generator's part of merged second `t`, as it was in that second
    /// (`requests` and `cpu_pct` of that second; `reporting`: whether it reported
    /// it). Empty for a run in one process, or a second too old to be kept: a live
    /// view asks as it takes each second, so a reload finds every second's parts.
    fn generators_at(&self, _t: u32) -> Vec<GeneratorLive> {
        Vec::new()
    }
    /// Each scrape of the target's metrics from now on (`observe:`), through a
    /// channel of `capacity` scrapes that loses them rather than wait; `None` when
    /// this run hands none out.
    fn subscribe_observed(
        &self,
        _capacity: usize,
    ) -> Option<crossbeam_channel::Receiver<std::sync::Arc<crate::ObservedScrape>>> {
        None
    }
    /// The failure samples kept so far (a few per step and error category, as
    /// `failures.jsonl` gets them, URLs masked), from the `from`-th on: a live view
    /// asks for the new ones each second.
    fn failure_samples(&self, _from: usize) -> Vec<pado_metrics::FailureSample> {
        Vec::new()
    }
}

/// The failure samples of a run so far, copied from the aggregator's totals
/// once a second (they are few: at most 3 per step and error category).
#[derive(Clone, Default)]
pub(crate) struct LiveFailures(std::sync::Arc<std::sync::Mutex<Vec<pado_metrics::FailureSample>>>);

impl LiveFailures {
    /// Keep the samples of `all` past the ones kept already (`all` only grows).
    pub(crate) fn catch_up(&self, all: &[pado_metrics::FailureSample]) {
        let mut kept = pado_base::lock(&self.0);
        if all.len() > kept.len() {
            let from = kept.len();
            kept.extend_from_slice(&all[from..]);
        }
    }

    fn from(&self, from: usize) -> Vec<pado_metrics::FailureSample> {
        pado_base::lock(&self.0)
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }
}

/// A run in this process as a live view sees it: its handle and its scrapes.
pub(crate) struct LocalRun {
    pub(crate) handle: crate::RunHandle,
    pub(crate) observed: crate::observed_feed::ObservedFeed,
    pub(crate) failures: LiveFailures,
}

impl LiveRun for LocalRun {
    fn subscribe(&self, capacity: usize) -> Subscription {
        self.handle.subscribe(capacity)
    }
    fn state(&self) -> RunState {
        self.handle.state()
    }
    fn apply(&self, cmd: &ControlCommand) -> Result<(), ControlError> {
        self.handle.apply(cmd)
    }
    fn subscribe_observed(
        &self,
        capacity: usize,
    ) -> Option<crossbeam_channel::Receiver<std::sync::Arc<crate::ObservedScrape>>> {
        Some(self.observed.subscribe(capacity))
    }
    fn failure_samples(&self, from: usize) -> Vec<pado_metrics::FailureSample> {
        self.failures.from(from)
    }
}

impl LiveRun for crate::RunHandle {
    fn subscribe(&self, capacity: usize) -> Subscription {
        crate::RunHandle::subscribe(self, capacity)
    }
    fn state(&self) -> RunState {
        crate::RunHandle::state(self)
    }
    fn apply(&self, cmd: &ControlCommand) -> Result<(), ControlError> {
        crate::RunHandle::apply(self, cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(category: &str, second: u32) -> pado_metrics::FailureSample {
        pado_metrics::FailureSample {
            step: "조회".into(),
            category: category.into(),
            second,
            method: "GET".into(),
            url: "/x?key=***".into(),
            status: 503,
            body: String::new(),
            check: None,
            actual: None,
            reason: None,
            event: None,
        }
    }

    #[test]
    fn a_live_view_gets_each_failure_sample_once() {
        let live = LiveFailures::default();
        live.catch_up(&[]);
        assert!(live.from(0).is_empty());
        let mut all = vec![sample("http_503", 0)];
        live.catch_up(&all);
        all.push(sample("timeout", 2));
        live.catch_up(&all);
        live.catch_up(&all);
        let got = live.from(0);
        assert_eq!(got, all);
        assert_eq!(live.from(1), vec![sample("timeout", 2)]);
        assert!(live.from(2).is_empty());
        assert!(live.from(9).is_empty());
    }
}

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
    /// Requests it sent in its last closed second.
    pub requests: u64,
    /// Its CPU use in its last closed second, in percent of one core.
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
    /// Each scrape of the target's metrics from now on (`observe:`), through a
    /// channel of `capacity` scrapes that loses them rather than wait; `None` when
    /// this run hands none out.
    fn subscribe_observed(
        &self,
        _capacity: usize,
    ) -> Option<crossbeam_channel::Receiver<std::sync::Arc<crate::ObservedScrape>>> {
        None
    }
}

/// A run in this process as a live view sees it: its handle and its scrapes.
pub(crate) struct LocalRun {
    pub(crate) handle: crate::RunHandle,
    pub(crate) observed: crate::observed_feed::ObservedFeed,
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

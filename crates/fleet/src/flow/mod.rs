//! What every coordinator flow shares, whatever starts the generators (`pado
//! agent`s here in [`agents`], a Kubernetes Job in `pado_k8s::flow`): the live
//! view's hand-off to the caller ([`LiveSink`], [`watch_live`]), the bounds of the
//! live loop for a run ([`live_options`]), and what a flow returns once it has
//! cleaned up ([`Collected`]): the generators' result directories, which the
//! caller merges and reports. A flow never merges itself, so the merge and its
//! reports have one home whatever ran the test.

pub mod agents;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use pado_metrics::{ScrapeOutcome, Totals};
use pado_results::merge::live::LiveSecond;

use crate::coordinate::{self, Control, GeneratorLink, LiveOptions, LiveOutcome, Notice};

/// Where a flow's line of progress goes (the CLI prints it on stderr).
pub type Say = Arc<dyn Fn(&str) + Send + Sync>;

/// What the coordinator shows and decides while the test runs: the caller's
/// progress line and its `abort_on_fail` thresholds, judged on the merged seconds
/// of the whole test (a segment's share never aborts on its own).
pub trait LiveSink {
    /// One second of the whole test (the generators' seconds `t` added) and the
    /// merged totals so far; [`Control::StopAll`] stops every generator.
    fn second(&mut self, s: &LiveSecond, totals: &Totals) -> Control;
    /// Something the live loop says (a generator left out, the stop).
    fn notice(&mut self, n: &Notice);
    /// The live view is over (end the progress line).
    fn finish(&mut self);
    /// Whether the view shows the target's metrics: then the live loop follows
    /// the scraping generator's (segment 0's) scrapes and hands each to
    /// [`LiveSink::scrape`].
    fn wants_scrapes(&self) -> bool {
        false
    }
    /// One scrape of the target's metrics by the scraping generator, on the test's
    /// time axis (its `t` from the agreed start), from its endpoint `endpoint`.
    fn scrape(&mut self, _endpoint: &str, _s: &ScrapeOutcome) {}
}

/// A sink that shows nothing and never stops the test.
#[derive(Debug, Default)]
pub struct NoLiveView;

impl LiveSink for NoLiveView {
    fn second(&mut self, _: &LiveSecond, _: &Totals) -> Control {
        Control::Continue
    }
    fn notice(&mut self, _: &Notice) {}
    fn finish(&mut self) {}
}

/// The live loop ([`coordinate::watch`]) with its seconds, notices (and, when it
/// [`LiveSink::wants_scrapes`], generator 0's scrapes of the target) handed to
/// `sink`; `seen` hears each notice first (a flow's own bookkeeping: which
/// generator was left out, that a stop was sent). `stop_asked` is the user's
/// Ctrl-C, polled between rounds. The sink is not finished here: when the live
/// view ends is the flow's to say.
pub async fn watch_live<L: GeneratorLink>(
    links: &mut [L],
    opts: &LiveOptions,
    sink: &mut dyn LiveSink,
    stop_asked: impl FnMut() -> Option<String>,
    mut seen: impl FnMut(&Notice),
) -> LiveOutcome {
    // Segment 0 scrapes the target (the coordinators give `--observe` to it
    // alone; a scenario's own `observe:` is scraped by every segment alike).
    let opts = LiveOptions {
        observed_from: sink.wants_scrapes().then_some(0),
        ..opts.clone()
    };
    // The callbacks reach the one sink, never at the same time.
    let sink = std::cell::RefCell::new(sink);
    coordinate::watch(
        links,
        &opts,
        |s, totals| sink.borrow_mut().second(s, totals),
        |endpoint, scrape| sink.borrow_mut().scrape(endpoint, scrape),
        stop_asked,
        |note| {
            seen(&note);
            sink.borrow_mut().notice(&note);
        },
    )
    .await
}

/// The live loop's bounds for a run whose second 0 is at `start_at` (wall clock)
/// and that lasts `run_for` (its planned length and longest graceful stop): polled
/// every `poll`, a generator left out after `stall_after` without a new second, and
/// the loop over `margin` after the run's end whatever happens.
pub fn live_options(
    start_at: SystemTime,
    run_for: Duration,
    poll: Duration,
    stall_after: Duration,
    margin: Duration,
) -> LiveOptions {
    let start = instant_of(start_at);
    LiveOptions {
        poll_every: poll,
        start,
        stall_after,
        deadline: start + run_for + margin,
        observed_from: None,
    }
}

/// `at` on this machine's monotonic clock (now, when `at` has passed).
pub fn instant_of(at: SystemTime) -> Instant {
    Instant::now() + at.duration_since(SystemTime::now()).unwrap_or_default()
}

/// A segment whose result is not there, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingSegment {
    /// Its index (0-based, as `--segment i/N`).
    pub index: u32,
    /// The number of segments.
    pub count: u32,
    /// What happened to it.
    pub reason: String,
}

impl MissingSegment {
    /// Segment `index` of `count`, missing because `reason`.
    pub fn new(index: usize, count: u32, reason: &str) -> MissingSegment {
        MissingSegment {
            index: index as u32,
            count,
            reason: reason.to_string(),
        }
    }
}

impl std::fmt::Display for MissingSegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "segment {}/{} missing: {}",
            self.index, self.count, self.reason
        )
    }
}

/// What a flow collected, after it cleaned up: the caller merges `dirs` (as
/// partial when [`Collected::is_partial`]) and reports.
#[derive(Clone, Debug, Default)]
pub struct Collected {
    /// The local result directories, in segment order.
    pub dirs: Vec<PathBuf>,
    /// Each segment's own exit code, by index, where its generator said it.
    pub exit_codes: BTreeMap<u32, i32>,
    /// Segments without a result.
    pub missing: Vec<MissingSegment>,
    /// The run was stopped by Ctrl-C (merge what there is as partial).
    pub interrupted: bool,
    /// Why every generator was stopped before its planned end (Ctrl-C, or an
    /// `abort_on_fail` threshold on the merged seconds): merge as partial.
    pub stopped: Option<String>,
    /// The live view saw this many seconds of the whole test.
    pub live_seconds: u32,
    /// The live view ended at its deadline before every generator's feed had.
    pub live_timed_out: bool,
}

impl Collected {
    /// The run was cut short on purpose (Ctrl-C, or a stop from the live view):
    /// segments stopped early or missing are expected, so the merge takes what
    /// there is and the merged thresholds judge it.
    pub fn is_partial(&self) -> bool {
        self.interrupted || self.stopped.is_some()
    }

    /// The segments whose run failed, with their exit codes: any code but 0 (it
    /// passed) or 99 (its thresholds failed, judged on its share only, which the
    /// merged verdict overrides). Their share of the merged result may be missing
    /// or wrong.
    pub fn failed_runs(&self) -> impl Iterator<Item = (u32, i32)> + '_ {
        self.exit_codes
            .iter()
            .filter(|(_, code)| !RUN_COMPLETED.contains(code))
            .map(|(i, code)| (*i, *code))
    }
}

/// The exit codes of a segment's `pado run` that measured what it was told to:
/// 0 (passed) and 99 (its verdict failed, `pado_analysis::verdict::EXIT_FAILED`).
const RUN_COMPLETED: [i32; 2] = [0, 99];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runs_that_did_not_complete_are_failed() {
        let c = Collected {
            // Planted: 0 passed, 1 failed, 99 judged its share, -1 said no code.
            exit_codes: BTreeMap::from([(0, 0), (1, 1), (2, 99), (3, -1)]),
            ..Default::default()
        };
        assert_eq!(c.failed_runs().collect::<Vec<_>>(), vec![(1, 1), (3, -1)]);
        let ok = Collected {
            exit_codes: BTreeMap::from([(0, 0), (1, 99)]),
            ..Default::default()
        };
        assert_eq!(ok.failed_runs().count(), 0);
    }

    #[test]
    fn a_stop_or_an_interrupt_makes_the_merge_partial() {
        assert!(!Collected::default().is_partial());
        let stopped = Collected {
            stopped: Some("Ctrl-C".into()),
            ..Default::default()
        };
        assert!(stopped.is_partial());
        let interrupted = Collected {
            interrupted: true,
            ..Default::default()
        };
        assert!(interrupted.is_partial());
    }

    #[test]
    fn the_live_deadline_is_the_run_s_end_plus_the_margin() {
        let at = SystemTime::now() + Duration::from_secs(10);
        let o = live_options(
            at,
            Duration::from_secs(30),
            Duration::from_secs(1),
            Duration::from_secs(5),
            Duration::from_secs(60),
        );
        let ahead = o.start.saturating_duration_since(Instant::now());
        assert!(
            ahead > Duration::from_secs(9) && ahead <= Duration::from_secs(10),
            "{ahead:?}"
        );
        assert_eq!(o.deadline - o.start, Duration::from_secs(90));
        // A start in the past is now.
        let past = instant_of(SystemTime::now() - Duration::from_secs(100));
        assert!(past.elapsed() < Duration::from_secs(1));
    }
}

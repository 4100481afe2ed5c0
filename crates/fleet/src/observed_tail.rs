//! The target's metrics in a distributed run, as the coordinator follows them: the
//! generator that scrapes the target (segment 0) writes its scrapes to its own
//! `observe.jsonl`; the live loop polls that file's new lines (`GET /observed`,
//! [`crate::job`]) alongside the generator's seconds and rebuilds each scrape
//! ([`pado_results::observe_replay`]) for the live view (the dashboard's charts of
//! the target and its bottleneck hint).
//!
//! What comes over the network is not trusted: an answer is bounded in bytes by
//! the client, only its complete lines are read, a line that is not a record is
//! counted and skipped, the replay's state is bounded, and a generator that does
//! not serve the file (an older pado answers `404`) is not asked again. Each kind
//! of trouble is said once ([`crate::coordinate::Notice::Observed`]), never fatal:
//! the test goes on, and the merged result has the file whole.

use pado_metrics::ScrapeOutcome;
use pado_results::observe_replay::ObserveReplay;

use crate::coordinate::{GeneratorLink, Notice};

/// What the coordinator saw of the target's metrics over the run.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ObservedTally {
    /// Scrapes handed to the live view (failed ones included).
    pub scrapes: u64,
    /// Lines that could not be read (counted and skipped).
    pub bad_lines: u64,
    /// Polls that got no usable answer.
    pub failed_polls: u64,
}

/// One generator's `observe.jsonl` as the live loop follows it.
#[derive(Debug)]
pub struct ObservedTail {
    /// The generator polled (its index among the links).
    pub generator: usize,
    next_line: usize,
    replay: ObserveReplay,
    /// Its generator does not serve the file: not asked again.
    off: bool,
    said_bad_line: bool,
    said_failed_poll: bool,
    /// What it saw so far.
    pub tally: ObservedTally,
}

impl ObservedTail {
    /// Follows the scrapes of generator `generator` from the file's first line.
    pub fn new(generator: usize) -> ObservedTail {
        ObservedTail {
            generator,
            next_line: 0,
            replay: ObserveReplay::new(),
            off: false,
            said_bad_line: false,
            said_failed_poll: false,
            tally: ObservedTally::default(),
        }
    }

    /// One poll of the new lines: each scrape they hold to `on_scrape`, trouble
    /// said once to `notice`.
    pub async fn poll<L: GeneratorLink>(
        &mut self,
        link: &mut L,
        on_scrape: &mut impl FnMut(&str, &ScrapeOutcome),
        notice: &mut impl FnMut(Notice),
    ) {
        if self.off {
            return;
        }
        let lines = match link.observed(self.next_line).await {
            Ok(Some(lines)) => lines,
            Ok(None) => {
                self.off = true;
                notice(Notice::Observed(format!(
                    "generator {} does not serve the target's metrics (a pado older than this coordinator?): the live view shows none; the merged result has them",
                    self.generator
                )));
                return;
            }
            Err(e) => {
                self.tally.failed_polls += 1;
                if !std::mem::replace(&mut self.said_failed_poll, true) {
                    notice(Notice::Observed(format!(
                        "the target's metrics from generator {} could not be read ({e}); trying again each second",
                        self.generator
                    )));
                }
                return;
            }
        };
        // Only complete lines: anything after the last `\n` is not one yet.
        let complete = lines
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(&lines[..0], |end| &lines[..=end]);
        for line in complete.split_inclusive(|b| *b == b'\n') {
            let line = &line[..line.len() - 1];
            self.next_line += 1;
            match self.replay.line(line) {
                Ok(Some((endpoint, scrape))) => {
                    self.tally.scrapes += 1;
                    on_scrape(&endpoint, &scrape);
                }
                Ok(None) => {}
                Err(e) => {
                    self.tally.bad_lines += 1;
                    if !std::mem::replace(&mut self.said_bad_line, true) {
                        notice(Notice::Observed(format!(
                            "a line of the target's metrics from generator {} was skipped: {e}",
                            self.generator
                        )));
                    }
                }
            }
        }
    }
}

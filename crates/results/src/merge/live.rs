//! The live side of a merge: the seconds generators stream while a split test runs,
//! added into one second of the whole test as soon as every generator has sent it.
//!
//! A coordinator (`pado run --generators`, `pado k8s run`) polls each generator's
//! feed (the lines of its `timeline.jsonl`) and pushes the seconds here; every
//! generator shares the agreed start, so their seconds line up by `t`. Second `t`
//! of the test is released once each generator has sent it or is known to send
//! nothing more (ended, gone, or given up on as stalled), so a progress line or an
//! `abort_on_fail` threshold sees the same sums `pado merge` writes at the end,
//! only sooner. Memory: the seconds of generators that are ahead of the slowest.
//!
//! A generator's seconds are input from the network: a second past the last one
//! the test's plan allows ([`LiveMerger::bounded`]) is refused ([`PastPlan`]), never
//! waited for, so a hostile or broken generator cannot make the coordinator release
//! billions of empty seconds.

use std::collections::VecDeque;

use pado_metrics::{GeneratorSecond, SecondRecord};

/// One second of the whole test, as far as the generators that reported it go.
#[derive(Debug)]
pub struct LiveSecond {
    /// The generators' seconds `t` added (counters summed, histograms added, VUs
    /// summed; no `generator` figures: those are in [`LiveSecond::generators`]).
    pub second: SecondRecord,
    /// Each generator's own figures for this second, by index (`None` when it did
    /// not report the second or measured none).
    pub generators: Vec<Option<GeneratorSecond>>,
    /// Each generator's requests in this second, by index (`None` when it did not
    /// report the second): its share of the load, as a live view shows it.
    pub requests: Vec<Option<u64>>,
    /// How many generators this second holds (the others had ended or stalled).
    pub reporting: usize,
}

/// A generator sent a second past the last one the test's plan allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "it sent second {t} (field `t`), past the end of the test: its plan allows seconds 0 to {last}"
)]
pub struct PastPlan {
    /// The second it sent.
    pub t: u32,
    /// The last second the plan allows.
    pub last: u32,
}

/// Adds the generators' streamed seconds in order of `t`.
#[derive(Debug)]
pub struct LiveMerger {
    pending: Vec<VecDeque<SecondRecord>>,
    /// The next `t` each generator is expected to send.
    next: Vec<u32>,
    finished: Vec<bool>,
    /// The next second of the test to release.
    t: u32,
    /// Seconds the test may have: `t` from 0 to `limit - 1`.
    limit: u32,
}

impl LiveMerger {
    /// A merger for `generators` generators, all at second 0, with no bound on `t`
    /// (for seconds from a trusted source).
    pub fn new(generators: usize) -> LiveMerger {
        Self::bounded(generators, u32::MAX)
    }

    /// A merger for `generators` generators whose test has at most `seconds`
    /// seconds (its planned end, the graceful stop and a margin): a second past them
    /// is refused by [`LiveMerger::try_push`].
    pub fn bounded(generators: usize, seconds: u32) -> LiveMerger {
        LiveMerger {
            pending: (0..generators).map(|_| VecDeque::new()).collect(),
            next: vec![0; generators],
            finished: vec![false; generators],
            t: 0,
            limit: seconds,
        }
    }

    /// The next second of the test to be released (how far the live view is).
    pub fn next_t(&self) -> u32 {
        self.t
    }

    /// The next second generator `g` is expected to send (where to poll its feed from).
    pub fn next_of(&self, g: usize) -> u32 {
        self.next.get(g).copied().unwrap_or(0)
    }

    /// A second from generator `g`. Seconds come in order; one already received
    /// (a feed polled twice), one for a second already released, and anything
    /// from a finished generator are left out: returns whether it was kept.
    pub fn push(&mut self, g: usize, rec: SecondRecord) -> bool {
        self.try_push(g, rec).unwrap_or(false)
    }

    /// [`LiveMerger::push`], with an error for a second past the test's end (the
    /// second is not kept; the caller decides what to do with the generator).
    pub fn try_push(&mut self, g: usize, rec: SecondRecord) -> Result<bool, PastPlan> {
        if g >= self.pending.len() || self.finished[g] || rec.t < self.next[g] {
            return Ok(false);
        }
        if rec.t >= self.limit {
            return Err(PastPlan {
                t: rec.t,
                last: self.limit.saturating_sub(1),
            });
        }
        self.next[g] = rec.t + 1;
        if rec.t < self.t {
            return Ok(false);
        }
        self.pending[g].push_back(rec);
        Ok(true)
    }

    /// Generator `g` sends nothing more (its run ended, it is gone, or the
    /// coordinator gave up waiting for it): later seconds are released without it.
    pub fn finish(&mut self, g: usize) {
        if let Some(f) = self.finished.get_mut(g) {
            *f = true;
        }
    }

    /// Whether generator `g` was finished.
    pub fn is_finished(&self, g: usize) -> bool {
        self.finished.get(g).copied().unwrap_or(true)
    }

    /// Generators the next second waits for (not finished and not yet past it).
    pub fn waiting_for(&self) -> Vec<usize> {
        (0..self.next.len())
            .filter(|&g| !self.finished[g] && self.next[g] <= self.t)
            .collect()
    }

    /// Whether every generator is finished and every second released.
    pub fn is_done(&self) -> bool {
        self.finished.iter().all(|f| *f) && self.pending.iter().all(VecDeque::is_empty)
    }

    /// The next second of the test, once every generator has sent it or finished;
    /// `None` while one is still due (or when everything is released).
    pub fn pop(&mut self) -> Option<LiveSecond> {
        if !self.waiting_for().is_empty() {
            return None;
        }
        if self.is_done() {
            return None;
        }
        let t = self.t;
        let mut second = SecondRecord::new(t);
        let mut generators = vec![None; self.pending.len()];
        let mut requests = vec![None; self.pending.len()];
        let mut reporting = 0;
        for (g, q) in self.pending.iter_mut().enumerate() {
            if q.front().is_some_and(|r| r.t == t) {
                let mut rec = q.pop_front().expect("front checked");
                generators[g] = rec.generator.take();
                requests[g] = Some(rec.requests());
                second.merge(rec);
                reporting += 1;
            }
        }
        self.t += 1;
        Some(LiveSecond {
            second,
            generators,
            requests,
            reporting,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::{Interval, Phase, Phases, RequestSample, SeriesKey, SeriesStats};

    fn sec(t: u32, requests: &[u64], vus: u32) -> SecondRecord {
        let mut r = SecondRecord::new(t);
        let mut s = SeriesStats::new(SeriesKey::named("get"));
        for us in requests {
            s.record(&RequestSample {
                status: 200,
                phases: Phases {
                    duration_us: *us,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        r.absorb(Interval {
            vus,
            vus_max: vus,
            series: vec![s],
            generator: Some(pado_metrics::GeneratorStats {
                wall_ns: 1_000_000_000,
                cpu_ns: 500_000_000,
                ..Default::default()
            }),
            ..Default::default()
        });
        r
    }

    #[test]
    fn a_second_is_released_only_when_every_generator_sent_it() {
        let mut m = LiveMerger::new(3);
        assert!(m.push(0, sec(0, &[1000, 2000], 2)));
        assert!(m.push(1, sec(0, &[3000], 1)));
        assert!(m.pop().is_none(), "generator 2 has not sent second 0");
        assert_eq!(m.waiting_for(), vec![2]);
        assert!(m.push(2, sec(0, &[100_000], 1)));
        let s = m.pop().expect("all three sent second 0");
        assert_eq!(s.second.t, 0);
        assert_eq!(s.second.requests(), 4);
        assert_eq!(s.second.vus, 4);
        assert_eq!(s.reporting, 3);
        assert!(s.generators.iter().all(Option::is_some));
        // Each generator's share of the second, by index.
        assert_eq!(s.requests, vec![Some(2), Some(1), Some(1)]);
        // The union's maximum is the slow generator's request, exactly.
        let all = s.second.overall();
        let max = all.phase(Phase::Duration).max_us();
        assert!((100_000..100_100).contains(&max), "{max}");
        assert!(m.pop().is_none(), "nobody sent second 1");
    }

    #[test]
    fn repeats_are_left_out_and_a_finished_generator_is_not_waited_for() {
        let mut m = LiveMerger::new(2);
        assert!(m.push(0, sec(0, &[1000], 1)));
        assert!(
            !m.push(0, sec(0, &[1000], 1)),
            "the same second polled twice"
        );
        assert!(m.push(0, sec(1, &[1000, 1000], 1)));
        m.finish(1);
        assert!(!m.push(1, sec(0, &[5000], 1)), "finished: ignored");
        let s0 = m.pop().unwrap();
        assert_eq!((s0.second.requests(), s0.reporting), (1, 1));
        assert_eq!(
            s0.requests,
            vec![Some(1), None],
            "the finished one sent none"
        );
        let s1 = m.pop().unwrap();
        assert_eq!((s1.second.t, s1.second.requests()), (1, 2));
        assert!(m.pop().is_none(), "generator 0 has not ended");
        assert!(!m.is_done());
        m.finish(0);
        assert!(m.is_done());
        assert!(m.pop().is_none());
    }

    #[test]
    fn a_second_past_the_plan_is_refused_and_nothing_is_released_for_it() {
        let mut m = LiveMerger::bounded(2, 30);
        assert_eq!(m.try_push(0, sec(0, &[1000], 1)), Ok(true));
        assert_eq!(
            m.try_push(0, sec(4_000_000_000, &[1000], 1)),
            Err(PastPlan {
                t: 4_000_000_000,
                last: 29
            })
        );
        assert_eq!(
            m.try_push(0, sec(29, &[1000], 1)),
            Ok(true),
            "the last second allowed"
        );
        assert!(!m.push(1, sec(30, &[1000], 1)), "push leaves it out too");
        m.finish(0);
        m.finish(1);
        let released: Vec<u32> = std::iter::from_fn(|| m.pop()).map(|s| s.second.t).collect();
        assert_eq!(released.len(), 30, "{released:?}");
        assert!(m.is_done());
    }

    #[test]
    fn a_generator_ahead_waits_in_its_queue() {
        let mut m = LiveMerger::new(2);
        for t in 0..5 {
            m.push(0, sec(t, &[1000], 1));
        }
        assert_eq!(m.next_of(0), 5);
        assert!(m.pop().is_none());
        m.push(1, sec(0, &[2000], 1));
        m.push(1, sec(1, &[2000], 1));
        let got: Vec<(u32, u64)> = std::iter::from_fn(|| m.pop())
            .map(|s| (s.second.t, s.second.requests()))
            .collect();
        assert_eq!(got, vec![(0, 2), (1, 2)]);
        assert_eq!(m.next_t(), 2);
        assert_eq!(m.waiting_for(), vec![1]);
    }
}

//! The one place where worker threads' measurements meet. Workers send one
//! [`Interval`] per second (never per request); the aggregator closes a second once
//! every worker has reported past it, so every request lands in exactly the second it
//! completed in, and hands closed seconds to a sink (result file, live progress).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use crate::{Interval, SecondRecord, SeriesKey, Totals};

/// Most distinct tag combinations one step may produce in a run (all workers
/// together); the requests of further combinations are counted under `~other` (and
/// the run warns): unbounded tag values (ids, timestamps) must not become unbounded
/// memory or an unreadable report. Each worker also stops creating series at this
/// many, so its memory is bounded before the aggregator sees anything.
pub const TAG_SERIES_CAP: usize = 500;

/// The value every tag of a step's overflow series takes.
pub const OTHER_TAG: &str = "~other";

/// What a worker thread tells the aggregator.
// Once a second per worker: boxing the interval would save a few hundred bytes per
// channel slot and add an allocation per message.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum WorkerMessage {
    /// A second's measurements (possibly empty) and the watermark it implies.
    Interval(Interval),
    /// Samples of failed requests a worker kept since its last message (already
    /// bounded per step and category by the worker); sent just before an interval,
    /// never per request.
    Failures(Vec<crate::FailureSample>),
    /// The worker has stopped and will send nothing more.
    Done {
        /// Which worker.
        worker: usize,
    },
}

/// Receives closed seconds in order, with the running totals. Runs on the
/// aggregator's thread, off the hot path.
pub type Sink = Box<dyn FnMut(&SecondRecord, &Totals) + Send>;

/// Merges worker intervals into ordered, closed seconds.
pub struct Aggregator {
    pending: BTreeMap<u32, SecondRecord>,
    watermark: Vec<Option<u32>>,
    done: Vec<bool>,
    next_t: u32,
    totals: Totals,
    sink: Sink,
    /// Tag combinations admitted so far, per step name (for [`TAG_SERIES_CAP`]).
    tag_sets: HashMap<String, HashSet<Vec<(String, String)>>>,
    /// Active and allocated VUs of the last second closed: what a second no worker
    /// reported carries forward.
    last_vus: (u32, u32),
}

/// The sending side given to workers, and the thread to join for the totals.
pub struct AggregatorHandle {
    /// Clone one per worker.
    pub tx: Sender<WorkerMessage>,
    join: JoinHandle<Totals>,
}

impl AggregatorHandle {
    /// Wait until every sender is gone (workers end, this handle's sender is dropped
    /// here) and return the run's totals.
    pub fn finish(self) -> Totals {
        drop(self.tx);
        self.join.join().unwrap_or_default()
    }
}

impl Aggregator {
    /// An aggregator expecting `workers` workers.
    pub fn new(workers: usize, sink: Sink) -> Self {
        Aggregator {
            pending: BTreeMap::new(),
            watermark: vec![None; workers],
            done: vec![false; workers],
            next_t: 0,
            totals: Totals::default(),
            sink,
            tag_sets: HashMap::new(),
            last_vus: (0, 0),
        }
    }

    /// Apply [`TAG_SERIES_CAP`] per step across workers: a tag combination new to
    /// the run once its step has the cap is renamed to the step's `~other` series,
    /// with its counts (so totals stay exact). Once admitted, a combination stays.
    fn cap_tags(&mut self, iv: &mut Interval) {
        for s in iv.series.iter_mut().filter(|s| !s.key.tags.is_empty()) {
            if s.key.tags.iter().all(|(_, v)| v == OTHER_TAG) {
                continue;
            }
            let set = self.tag_sets.entry(s.key.name.clone()).or_default();
            if set.contains(&s.key.tags) {
                continue;
            }
            if set.len() < TAG_SERIES_CAP {
                set.insert(s.key.tags.clone());
                continue;
            }
            let tags = s
                .key
                .tags
                .iter()
                .map(|(k, _)| (k.clone(), OTHER_TAG.to_string()))
                .collect();
            s.key = SeriesKey {
                name: std::mem::take(&mut s.key.name),
                tags,
            };
        }
    }

    /// Start the aggregator on its own thread.
    pub fn spawn(workers: usize, sink: Sink) -> AggregatorHandle {
        // Bounded: at most a few seconds of intervals per worker can be in flight; a
        // worker that outruns a stuck sink waits instead of growing memory.
        let (tx, rx) = crossbeam_channel::bounded(workers.max(1) * 64);
        let agg = Aggregator::new(workers, sink);
        let join = std::thread::Builder::new()
            .name("pado-aggregator".into())
            .spawn(move || agg.run(rx))
            .expect("spawning the aggregator thread");
        AggregatorHandle { tx, join }
    }

    fn run(mut self, rx: Receiver<WorkerMessage>) -> Totals {
        // Until every sender is gone: a participant that said Done may still send
        // (a teardown after the load), and its seconds are merged all the same.
        while let Ok(msg) = rx.recv() {
            self.handle(msg);
        }
        self.flush_all();
        self.totals
    }

    /// Process one message (public for tests and for offline merging).
    pub fn handle(&mut self, msg: WorkerMessage) {
        match msg {
            WorkerMessage::Interval(mut iv) => {
                self.cap_tags(&mut iv);
                let w = iv.worker;
                let t = iv.second;
                if w < self.watermark.len() {
                    self.watermark[w] = Some(self.watermark[w].map_or(t, |m| m.max(t)));
                }
                if t < self.next_t {
                    // A second already closed (cannot happen with well-behaved
                    // workers): fold into the earliest open second so nothing is lost.
                    let t2 = self.next_t;
                    self.pending
                        .entry(t2)
                        .or_insert_with(|| SecondRecord::new(t2))
                        .absorb(iv);
                } else {
                    self.pending
                        .entry(t)
                        .or_insert_with(|| SecondRecord::new(t))
                        .absorb(iv);
                }
            }
            WorkerMessage::Failures(v) => {
                for f in v {
                    crate::failure::keep_bounded(&mut self.totals.failures, f);
                }
                return;
            }
            WorkerMessage::Done { worker } => {
                if worker < self.done.len() {
                    self.done[worker] = true;
                }
            }
        }
        self.close_ready();
    }

    fn close_ready(&mut self) {
        // The lowest watermark among running workers; finished workers do not hold
        // seconds back.
        let mut limit: Option<u32> = None;
        for (w, d) in self.done.iter().enumerate() {
            if *d {
                continue;
            }
            match self.watermark[w] {
                None => return,
                Some(m) => limit = Some(limit.map_or(m, |l: u32| l.min(m))),
            }
        }
        match limit {
            Some(l) => self.close_through(l),
            None => self.flush_all(),
        }
    }

    fn close_through(&mut self, last: u32) {
        while self.next_t <= last {
            let t = self.next_t;
            let rec = match self.pending.remove(&t) {
                Some(rec) => rec,
                // No worker reported this second while the load ran: pado itself
                // stalled through it (suspended, starved of CPU). Its VUs did not
                // stop, so the second carries the last counts instead of 0, which a
                // VU chart would show as the load falling to nothing; it completed
                // nothing and has no generator figures, which tells it apart.
                None if !self.done.iter().any(|d| *d) => SecondRecord {
                    vus: self.last_vus.0,
                    vus_max: self.last_vus.1,
                    ..SecondRecord::new(t)
                },
                None => SecondRecord::new(t),
            };
            self.emit(rec);
        }
    }

    fn flush_all(&mut self) {
        if let Some((&last, _)) = self.pending.iter().next_back() {
            self.close_through(last);
        }
    }

    fn emit(&mut self, mut rec: SecondRecord) {
        if let Some(g) = rec.generator.as_mut() {
            // Once a second, off the workers: pado's own memory over the run.
            g.note_memory();
        }
        self.last_vus = (rec.vus, rec.vus_max);
        self.totals.add_second(&rec);
        (self.sink)(&rec, &self.totals);
        self.next_t = rec.t + 1;
    }

    /// Totals so far.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RequestSample, SeriesKey, SeriesStats};
    use std::sync::{Arc, Mutex};

    fn iv(worker: usize, second: u32, n: u64) -> WorkerMessage {
        let mut s = SeriesStats::new(SeriesKey::named("a"));
        for _ in 0..n {
            s.record(&RequestSample {
                status: 200,
                ..Default::default()
            });
        }
        WorkerMessage::Interval(Interval {
            worker,
            second,
            series: if n > 0 { vec![s] } else { vec![] },
            ..Default::default()
        })
    }

    #[test]
    fn the_tag_cap_is_per_step_across_workers_and_counts_stay_exact() {
        let mut agg = Aggregator::new(2, Box::new(|_, _| {}));
        // Two workers, each under the cap on its own, 700 combinations together.
        for w in 0..2usize {
            let series = (0..350)
                .map(|i| {
                    let mut s = SeriesStats::new(SeriesKey {
                        name: "get".into(),
                        tags: vec![("id".into(), format!("{w}-{i}"))],
                    });
                    s.record(&RequestSample {
                        status: 200,
                        ..Default::default()
                    });
                    s
                })
                .collect();
            agg.handle(WorkerMessage::Interval(Interval {
                worker: w,
                second: 0,
                series,
                ..Default::default()
            }));
        }
        agg.handle(WorkerMessage::Done { worker: 0 });
        agg.handle(WorkerMessage::Done { worker: 1 });
        let t = agg.totals();
        let other: Vec<_> = t
            .series
            .iter()
            .filter(|s| s.key.tags[0].1 == OTHER_TAG)
            .collect();
        assert_eq!(t.series.len(), TAG_SERIES_CAP + 1);
        assert_eq!(other.len(), 1);
        assert_eq!(other[0].requests, 200);
        assert_eq!(t.series.iter().map(|s| s.requests).sum::<u64>(), 700);
    }

    #[test]
    fn closes_seconds_only_when_all_workers_passed_them() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let mut a = Aggregator::new(
            2,
            Box::new(move |r, _| s2.lock().unwrap().push((r.t, r.requests()))),
        );
        a.handle(iv(0, 0, 3));
        a.handle(iv(0, 1, 4));
        assert!(seen.lock().unwrap().is_empty());
        a.handle(iv(1, 0, 5));
        assert_eq!(*seen.lock().unwrap(), vec![(0, 8)]);
        a.handle(iv(1, 2, 1)); // worker 1 skipped second 1
        assert_eq!(*seen.lock().unwrap(), vec![(0, 8), (1, 4)]);
        a.handle(WorkerMessage::Done { worker: 0 });
        assert_eq!(*seen.lock().unwrap(), vec![(0, 8), (1, 4), (2, 1)]);
        a.handle(WorkerMessage::Done { worker: 1 });
        assert_eq!(a.totals().overall().requests, 13);
    }

    #[test]
    fn generator_figures_merge_per_second_across_workers() {
        use crate::GeneratorStats;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let mut a = Aggregator::new(2, Box::new(move |r, _| s2.lock().unwrap().push(r.clone())));
        let gen = |worker: usize, second: u32, cpu_ms: u64, lag_us: u64| {
            let mut g = GeneratorStats {
                wall_ns: 1_000_000_000,
                cpu_ns: cpu_ms * 1_000_000,
                wait_ns: Some(cpu_ms * 100_000),
                ..Default::default()
            };
            g.lag.record(lag_us);
            WorkerMessage::Interval(Interval {
                worker,
                second,
                generator: Some(g),
                ..Default::default()
            })
        };
        a.handle(gen(0, 0, 950, 40_000));
        a.handle(gen(0, 1, 100, 300));
        a.handle(gen(1, 0, 100, 200));
        a.handle(gen(1, 1, 200, 700));
        a.handle(WorkerMessage::Done { worker: 0 });
        a.handle(WorkerMessage::Done { worker: 1 });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        let g0 = seen[0].generator.unwrap();
        assert_eq!(g0.workers, 2);
        assert_eq!(g0.cpu_ns, 1_050_000_000);
        assert_eq!(g0.wait_ns, Some(105_000_000));
        assert!((g0.busy_max - 0.95).abs() < 1e-9, "{g0:?}");
        assert_eq!(g0.lag_p99_us, 40_000);
        assert_eq!(g0.lag.count(), 2);
        let g1 = seen[1].generator.unwrap();
        assert!((g1.busy_max - 0.2).abs() < 1e-9, "{g1:?}");
        assert_eq!(g1.lag.max_us, 700);
        // An interval without figures (the setup runner's) changes none, and a
        // second nobody measured stays unmeasured.
        let mut r = seen[1].clone();
        r.absorb(Interval::default());
        assert_eq!(r.generator, seen[1].generator);
        let mut r = SecondRecord::new(9);
        r.absorb(Interval::default());
        assert!(r.generator.is_none());
    }

    #[test]
    fn failure_samples_are_bounded_across_workers() {
        use crate::FailureSample;
        let mut a = Aggregator::new(2, Box::new(|_, _| {}));
        let f = |w: u32| FailureSample {
            step: "s".into(),
            category: "http_500".into(),
            second: w,
            ..Default::default()
        };
        a.handle(WorkerMessage::Failures(vec![f(0), f(0)]));
        a.handle(WorkerMessage::Failures(vec![f(1), f(1)]));
        let seconds: Vec<u32> = a.totals().failures.iter().map(|x| x.second).collect();
        assert_eq!(seconds, vec![0, 0, 1]);
    }

    #[test]
    fn spawned_aggregator_returns_totals() {
        let h = Aggregator::spawn(1, Box::new(|_, _| {}));
        h.tx.send(iv(0, 0, 2)).unwrap();
        h.tx.send(iv(0, 5, 3)).unwrap();
        h.tx.send(WorkerMessage::Done { worker: 0 }).unwrap();
        let t = h.finish();
        assert_eq!(t.overall().requests, 5);
        assert_eq!(t.seconds, 6);
    }

    /// Seconds 2 and 3 reported by no worker (the generator stalled) carry the 10
    /// VUs of second 1 rather than 0; seconds after every worker ended (before a
    /// teardown's) have none.
    #[test]
    fn a_second_no_worker_reported_carries_the_vus_forward() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let mut a = Aggregator::new(
            2,
            Box::new(move |r: &SecondRecord, _: &Totals| s2.lock().unwrap().push(r.clone())),
        );
        let at = |worker: usize, second: u32, vus: u32| {
            WorkerMessage::Interval(Interval {
                worker,
                second,
                vus,
                vus_max: vus,
                ..Default::default()
            })
        };
        for t in [0, 1, 4] {
            a.handle(at(0, t, 5));
            a.handle(at(1, t, 5));
        }
        a.handle(WorkerMessage::Done { worker: 0 });
        a.handle(WorkerMessage::Done { worker: 1 });
        // A teardown's interval after the load ended, at second 8.
        a.handle(at(0, 8, 0));
        a.handle(WorkerMessage::Done { worker: 0 });
        let seen = seen.lock().unwrap();
        let vus: Vec<(u32, u32)> = seen.iter().map(|r| (r.t, r.vus)).collect();
        assert_eq!(
            vus,
            [
                (0, 10),
                (1, 10),
                (2, 10),
                (3, 10),
                (4, 10),
                (5, 0),
                (6, 0),
                (7, 0),
                (8, 0)
            ]
        );
        assert!(seen[2].series.is_empty() && seen[2].generator.is_none());
        assert_eq!(seen[3].vus_max, 10);
    }
}

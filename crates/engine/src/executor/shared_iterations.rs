//! `shared-iterations`: a fixed number of iterations shared by a fixed number of VUs
//! (bounded by a maximum duration). Each VU takes the next iteration from one count
//! common to all of them, so a VU on a fast path runs more than one on a slow path and
//! the total is exact: the model k6 uses when a script gives only `iterations`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pado_scenario::ExecutorKind;

use super::{
    iterations_within_limit, iterations_words, within_limit, ClosedSchedule, Executor, Schedule,
};

/// The iterations a scenario's VUs share: how many there are, and how many have been
/// taken so far. Clones share the count, so the VUs of every worker take from the
/// same one (one atomic add per iteration, no lock).
#[derive(Clone, Debug)]
pub struct IterationPool {
    total: u64,
    taken: Arc<AtomicU64>,
}

impl IterationPool {
    /// A pool of `total` iterations, none taken.
    pub fn new(total: u64) -> IterationPool {
        IterationPool {
            total,
            taken: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many iterations the pool holds in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Take the next iteration: `false` once all have been taken (the VU then stops).
    pub fn take(&self) -> bool {
        // Past the total the count keeps growing by one per VU that asks (at most
        // once each), far from wrapping.
        self.taken.fetch_add(1, Ordering::Relaxed) < self.total
    }
}

/// Two pools are the same plan when they hold the same number of iterations; what has
/// been taken is run-time state, not part of the schedule.
impl PartialEq for IterationPool {
    fn eq(&self, other: &Self) -> bool {
        self.total == other.total
    }
}

/// `iterations` in all on `vus` VUs.
#[derive(Clone, Debug)]
pub struct SharedIterations {
    /// VUs.
    pub vus: u32,
    /// Time limit: iterations not taken by then are not run.
    pub max_duration: Duration,
    /// The iterations, shared by every schedule this executor hands out (one per
    /// worker), so that all VUs take from one count.
    pub pool: IterationPool,
}

impl SharedIterations {
    /// `iterations` shared by `vus` VUs for at most `max_duration`.
    pub fn new(vus: u32, iterations: u64, max_duration: Duration) -> SharedIterations {
        SharedIterations {
            vus,
            max_duration,
            pool: IterationPool::new(iterations),
        }
    }
}

impl Executor for SharedIterations {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::SharedIterations
    }
    fn describe(&self) -> String {
        within_limit(
            format!(
                "{} shared by {}",
                iterations_words(self.pool.total()),
                pado_base::units::vus(f64::from(self.vus))
            ),
            self.max_duration,
        )
    }
    iterations_within_limit!();
    fn schedule(&self) -> Schedule {
        let mut s = ClosedSchedule::all_along(self.vus, self.max_duration, None);
        s.shared_iterations = Some(self.pool.clone());
        Schedule::Closed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(s: Schedule) -> ClosedSchedule {
        match s {
            Schedule::Closed(c) => c,
            Schedule::Open(_) => panic!("shared-iterations is a closed model"),
        }
    }

    #[test]
    fn all_vus_run_along_the_limit_with_no_per_vu_cap() {
        let e = SharedIterations::new(3, 10, Duration::from_secs(60));
        let c = closed(e.schedule());
        assert_eq!(c.vus.len(), 3);
        assert!(c
            .vus
            .iter()
            .all(|w| w.len() == 1 && w[0].end == Duration::from_secs(60)));
        assert_eq!(c.iterations_per_vu, None);
        assert_eq!(c.shared_iterations.as_ref().map(|p| p.total()), Some(10));
        assert_eq!(e.describe(), "10 iterations shared by 3 VUs (at most 1m)");
    }

    #[test]
    fn the_pool_gives_exactly_its_total_across_all_schedules_handed_out() {
        let e = SharedIterations::new(4, 7, Duration::from_secs(60));
        // One schedule per worker: they must share one count.
        let a = closed(e.schedule()).shared_iterations.unwrap();
        let b = closed(e.schedule()).shared_iterations.unwrap();
        let mut got = 0;
        for i in 0..20 {
            let p = if i % 2 == 0 { &a } else { &b };
            if p.take() {
                got += 1;
            }
        }
        assert_eq!(got, 7);
        assert!(!a.take() && !b.take());
    }

    #[test]
    fn threads_taking_at_once_never_take_more_than_the_total() {
        let pool = IterationPool::new(10_000);
        let taken: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let p = pool.clone();
                    s.spawn(move || (0..5_000).filter(|_| p.take()).count() as u64)
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(taken, 10_000);
    }
}

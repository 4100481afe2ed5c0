//! `/slots`: a route whose capacity is known exactly and can be changed at run time,
//! for experiments that sweep a knob. Each request takes one of N slots (waiting in
//! arrival order when all are taken), holds it `ms` milliseconds, then answers: at
//! most N/ms×1000 answers per second, whatever the load. `/slots/set?n=N` changes N
//! (the knob; every setting is kept, in order, for tests to check that an
//! experiment applied and restored it), `/slots/state` says N and the settings, `/slots/metrics` the slots in use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

/// Slots when nothing has set them.
pub(crate) const DEFAULT_SLOTS: u64 = 1;
/// Most slots a setting may ask for.
const MAX_SLOTS: u64 = 10_000;

/// The slots and their settings.
pub(crate) struct Slots {
    /// The current slots; a new setting replaces the semaphore (requests holding a
    /// slot of the old one finish on it).
    current: Mutex<(u64, Arc<Semaphore>)>,
    /// Every setting made, in order.
    settings: Mutex<Vec<u64>>,
    /// Requests holding a slot now.
    busy: AtomicU64,
    /// Requests waiting for one now.
    waiting: AtomicU64,
    /// Slots given back so far, and how long they were held in all (nanoseconds):
    /// the timer sleeps a little longer than asked, more on a busy machine, so a
    /// test's truth is N over the hold really served, not the hold asked for.
    held: AtomicU64,
    held_nanos: AtomicU64,
}

impl Default for Slots {
    fn default() -> Self {
        Slots {
            current: Mutex::new((
                DEFAULT_SLOTS,
                Arc::new(Semaphore::new(DEFAULT_SLOTS as usize)),
            )),
            settings: Mutex::new(Vec::new()),
            busy: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
            held: AtomicU64::new(0),
            held_nanos: AtomicU64::new(0),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Slots {
    /// Sets N; an error for a number out of range.
    pub(crate) fn set(&self, n: u64) -> Result<(), String> {
        if n == 0 || n > MAX_SLOTS {
            return Err(format!("slots: give 1..={MAX_SLOTS}"));
        }
        *lock(&self.current) = (n, Arc::new(Semaphore::new(n as usize)));
        lock(&self.settings).push(n);
        Ok(())
    }

    /// The current N.
    pub(crate) fn n(&self) -> u64 {
        lock(&self.current).0
    }

    /// Every setting made so far, in order.
    pub(crate) fn settings(&self) -> Vec<u64> {
        lock(&self.settings).clone()
    }

    /// Takes a slot (waiting in arrival order), holds it `hold`, gives it back.
    pub(crate) async fn hold(&self, hold: std::time::Duration) {
        let sem = Arc::clone(&lock(&self.current).1);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let permit = sem.acquire_owned().await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        if let Ok(_permit) = permit {
            self.busy.fetch_add(1, Ordering::Relaxed);
            let took = std::time::Instant::now();
            tokio::time::sleep(hold).await;
            let nanos = u64::try_from(took.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.held_nanos.fetch_add(nanos, Ordering::Relaxed);
            self.held.fetch_add(1, Ordering::Relaxed);
            self.busy.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// How long a slot was really held on average, over every slot given back so
    /// far; `None` before the first.
    pub(crate) fn mean_hold(&self) -> Option<std::time::Duration> {
        let n = self.held.load(Ordering::Relaxed);
        (n > 0)
            .then(|| std::time::Duration::from_nanos(self.held_nanos.load(Ordering::Relaxed) / n))
    }

    /// `/slots/metrics`: the slots in use beside their maximum and the requests
    /// waiting, in Prometheus text, named as pools are (`_active` beside `_max`,
    /// `_pending`) so that the bottleneck table can name the slots as the limit.
    pub(crate) fn metrics(&self) -> String {
        format!(
            "# TYPE testkit_slots_active gauge\ntestkit_slots_active {}\n# TYPE testkit_slots_max gauge\ntestkit_slots_max {}\n# TYPE testkit_slots_pending gauge\ntestkit_slots_pending {}\n",
            self.busy.load(Ordering::Relaxed),
            self.n(),
            self.waiting.load(Ordering::Relaxed)
        )
    }

    /// `{"n":N,"settings":[...]}`.
    pub(crate) fn state_json(&self) -> String {
        serde_json::json!({"n": self.n(), "settings": self.settings()}).to_string()
    }
}

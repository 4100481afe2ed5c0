//! Ctrl-C, SIGTERM and SIGHUP as *requests*, one shared rule for every command that
//! listens for them (`run`, the coordinator, `agent`, `k8s`, `target serve`).
//!
//! The same signal is often delivered more than once for one request: GNU `timeout`
//! (the usual CI wrapper) sends its SIGTERM to the child and then to the whole
//! process group, so pado receives it twice within microseconds; `kill -TERM -PGID`
//! and a terminal's Ctrl-C reach every process of the group too. Counted naively,
//! that one request reads as "Ctrl-C pressed twice" and pado quits at once (exit 130),
//! without its summary, its report or the undo of an open fault window. So a signal
//! counts as a new request only when it comes at least [`DEBOUNCE`] after the last
//! one counted; closer ones are the same request delivered again.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long after a counted signal another one is still the same request. A person
/// pressing Ctrl-C twice on purpose takes longer than this; `timeout`'s or a
/// process group's repeated delivery takes microseconds.
pub(crate) const DEBOUNCE: Duration = Duration::from_millis(300);

/// Counts distinct requests among signals that arrive at given instants.
#[derive(Debug, Default)]
pub(crate) struct Debouncer {
    /// Distinct requests so far.
    requests: AtomicU32,
    /// When the last counted one arrived, µs after the clock's start, plus one
    /// (0: none yet).
    last_us: AtomicU64,
}

impl Debouncer {
    /// A signal at `at` (on any monotonic clock that started before the first one):
    /// the number of this request (1 for the first) when it is a new one, `None`
    /// when it repeats the last one.
    pub(crate) fn signal(&self, at: Duration) -> Option<u32> {
        let now = at.as_micros() as u64 + 1;
        let last = self.last_us.load(Ordering::SeqCst);
        if last != 0 && now.saturating_sub(last) < DEBOUNCE.as_micros() as u64 {
            return None;
        }
        self.last_us.store(now, Ordering::SeqCst);
        Some(self.requests.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// Distinct requests so far.
    pub(crate) fn requests(&self) -> u32 {
        self.requests.load(Ordering::SeqCst)
    }
}

static REQUESTS: Debouncer = Debouncer {
    requests: AtomicU32::new(0),
    last_us: AtomicU64::new(0),
};
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Calls `handler` with the request's number (1, 2, ...) for each distinct stop
/// request (SIGINT, SIGTERM, SIGHUP), repeats within [`DEBOUNCE`] left out. Once per
/// process, as the signal handler is.
pub(crate) fn install(mut handler: impl FnMut(u32) + Send + 'static) -> Result<(), ctrlc::Error> {
    let epoch = *EPOCH.get_or_init(Instant::now);
    ctrlc::set_handler(move || {
        if let Some(n) = REQUESTS.signal(epoch.elapsed()) {
            handler(n);
        }
    })
}

/// Distinct stop requests this process received.
pub(crate) fn requests() -> u32 {
    REQUESTS.requests()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn one_signal_delivered_twice_is_one_request() {
        // `timeout`: the child, then the group, microseconds apart; then SIGCONT,
        // which is no stop signal and never reaches the handler.
        let d = Debouncer::default();
        assert_eq!(d.signal(ms(4000)), Some(1));
        assert_eq!(d.signal(ms(4000) + Duration::from_micros(40)), None);
        assert_eq!(
            d.signal(ms(4000) + DEBOUNCE - Duration::from_micros(1)),
            None
        );
        assert_eq!(d.requests(), 1);
    }

    #[test]
    fn a_later_signal_is_a_second_request() {
        let d = Debouncer::default();
        // At 0 (the clock's very start) too: 0 is not mistaken for "none yet".
        assert_eq!(d.signal(ms(0)), Some(1));
        assert_eq!(d.signal(DEBOUNCE), Some(2));
        assert_eq!(d.signal(DEBOUNCE + ms(1000)), Some(3));
        assert_eq!(d.requests(), 3);
    }

    #[test]
    fn the_window_runs_from_the_last_counted_request() {
        // Repeats do not extend the window: a press 300 ms after the first one
        // counts even if repeats came in between.
        let d = Debouncer::default();
        assert_eq!(d.signal(ms(100)), Some(1));
        assert_eq!(d.signal(ms(250)), None);
        assert_eq!(d.signal(ms(100) + DEBOUNCE), Some(2));
    }
}

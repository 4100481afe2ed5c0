//! A worker thread's view of itself: CPU time and run-queue wait from the kernel, and
//! how late the worker's event loop wakes up. A load generator at 100% CPU, or one
//! that waits for a CPU behind other processes, delays every request it times and caps
//! the throughput it can offer; these figures let the report say so instead of
//! blaming the target.
//!
//! Read once per second per worker (when the worker closes a second), never per
//! request.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use pado_metrics::{GeneratorStats, LagHistogram};

use super::worker::WorkerCtx;

/// Per-thread scheduler statistics of the calling thread: nanoseconds on a CPU,
/// nanoseconds runnable but waiting on a run queue, timeslices run.
pub(super) const SCHEDSTAT_PATH: &str = "/proc/thread-self/schedstat";

/// Period of the event-loop probe: short enough for about a hundred samples per
/// second, long enough to cost nothing measurable. tokio's timer rounds it up to the
/// next millisecond, so an idle loop shows 0–1 ms of lag.
pub(super) const LAG_PROBE_PERIOD: Duration = Duration::from_millis(10);

/// The three numbers of a `schedstat` file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SchedStat {
    /// Time spent on a CPU (ns).
    pub cpu_ns: u64,
    /// Time spent runnable on a run queue without a CPU (ns).
    pub wait_ns: u64,
    /// Timeslices run on a CPU.
    pub timeslices: u64,
}

/// Why a `schedstat` text could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum SchedStatError {
    /// Fewer than the three fields the kernel writes.
    #[error("schedstat has {found} fields, expected 3")]
    MissingFields {
        /// Fields found.
        found: usize,
    },
    /// A field that is not a non-negative integer.
    #[error("schedstat field {index} is not a number")]
    NotANumber {
        /// 0-based field position.
        index: usize,
    },
}

/// Parse `/proc/.../schedstat` (`"<cpu ns> <wait ns> <timeslices>\n"`). Extra fields a
/// future kernel might add are ignored.
pub(super) fn parse_schedstat(text: &[u8]) -> Result<SchedStat, SchedStatError> {
    let mut v = [0u64; 3];
    let mut found = 0;
    for (index, field) in text
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .take(3)
        .enumerate()
    {
        let mut n: u64 = 0;
        for &b in field {
            if !b.is_ascii_digit() {
                return Err(SchedStatError::NotANumber { index });
            }
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add((b - b'0') as u64))
                .ok_or(SchedStatError::NotANumber { index })?;
        }
        v[index] = n;
        found += 1;
    }
    if found < 3 {
        return Err(SchedStatError::MissingFields { found });
    }
    Ok(SchedStat {
        cpu_ns: v[0],
        wait_ns: v[1],
        timeslices: v[2],
    })
}

/// CPU time of the calling thread from `getrusage(RUSAGE_THREAD)` (user + system), in
/// ns: the fallback where `schedstat` is missing (no run-queue wait there).
fn rusage_thread_cpu_ns() -> Option<u64> {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own; the result is checked.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// One reading of a thread's cumulative times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ThreadTimes {
    /// CPU time so far (ns).
    pub cpu_ns: u64,
    /// Run-queue wait so far (ns); `None` when only `getrusage` could be read.
    pub wait_ns: Option<u64>,
}

/// Reads the times of the thread that created it. Keeps the `schedstat` file open (it
/// names that thread's task, whichever thread reads it later) and re-reads it with
/// `pread` at offset 0 into a stack buffer: no allocation per reading.
pub(super) struct ThreadClock {
    schedstat: Option<File>,
}

impl ThreadClock {
    /// A clock for the calling thread. Never fails: without `schedstat` it falls back
    /// to `getrusage` (CPU only).
    pub(super) fn for_current_thread() -> Self {
        let mut c = ThreadClock {
            schedstat: File::open(SCHEDSTAT_PATH).ok(),
        };
        if c.read_schedstat().is_none() {
            c.schedstat = None;
        }
        c
    }

    /// Whether run-queue wait is available (the `schedstat` file could be read).
    #[cfg(test)]
    pub(super) fn has_wait(&self) -> bool {
        self.schedstat.is_some()
    }

    fn read_schedstat(&self) -> Option<SchedStat> {
        let f = self.schedstat.as_ref()?;
        let mut buf = [0u8; 128];
        let n = f.read_at(&mut buf, 0).ok()?;
        parse_schedstat(&buf[..n]).ok()
    }

    /// The thread's times now; `None` only if neither source can be read.
    pub(super) fn read(&self) -> Option<ThreadTimes> {
        match self.read_schedstat() {
            Some(s) => Some(ThreadTimes {
                cpu_ns: s.cpu_ns,
                wait_ns: Some(s.wait_ns),
            }),
            None => rusage_thread_cpu_ns().map(|cpu_ns| ThreadTimes {
                cpu_ns,
                wait_ns: None,
            }),
        }
    }
}

/// A worker's self-measurement between two closed seconds: the clock, the previous
/// reading and when it was taken.
pub(super) struct SelfMeter {
    clock: ThreadClock,
    last: Option<ThreadTimes>,
    last_at: Instant,
}

impl SelfMeter {
    /// Start measuring the calling thread from now.
    pub(super) fn start() -> Self {
        let clock = ThreadClock::for_current_thread();
        let last = clock.read();
        SelfMeter {
            clock,
            last,
            last_at: Instant::now(),
        }
    }

    /// The figures since the previous call (or [`SelfMeter::start`]), with the lag
    /// samples gathered meanwhile. Without any readable clock, the span is 0 (CPU
    /// unmeasured) and only the lag is reported.
    pub(super) fn interval(&mut self, lag: LagHistogram) -> GeneratorStats {
        let now = Instant::now();
        let cur = self.clock.read();
        let out = match (self.last, cur) {
            (Some(a), Some(b)) => GeneratorStats {
                wall_ns: now.saturating_duration_since(self.last_at).as_nanos() as u64,
                cpu_ns: b.cpu_ns.saturating_sub(a.cpu_ns),
                wait_ns: match (a.wait_ns, b.wait_ns) {
                    (Some(x), Some(y)) => Some(y.saturating_sub(x)),
                    _ => None,
                },
                lag,
            },
            _ => GeneratorStats {
                lag,
                ..Default::default()
            },
        };
        self.last = cur;
        self.last_at = now;
        out
    }
}

/// The event-loop probe: sleep [`LAG_PROBE_PERIOD`] on the worker's runtime, over and
/// over, and record how late each wake-up came. A loop kept busy by VUs (or a thread
/// kept off the CPU) wakes it late by as much as it delays every VU's timers and
/// reads. Runs until aborted with the worker's other housekeeping tasks; it holds
/// nothing that keeps the runtime alive.
pub(super) async fn lag_probe(ctx: Rc<WorkerCtx>) {
    loop {
        let due = Instant::now() + LAG_PROBE_PERIOD;
        tokio::time::sleep_until(due.into()).await;
        let now = Instant::now();
        ctx.record_lag(now.saturating_duration_since(due), now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_format() {
        assert_eq!(
            parse_schedstat(b"8123456789 1228793 412\n"),
            Ok(SchedStat {
                cpu_ns: 8_123_456_789,
                wait_ns: 1_228_793,
                timeslices: 412
            })
        );
        // A future fourth field is ignored.
        assert_eq!(parse_schedstat(b"1 2 3 4").unwrap().timeslices, 3);
    }

    #[test]
    fn rejects_what_is_not_schedstat() {
        assert_eq!(
            parse_schedstat(b""),
            Err(SchedStatError::MissingFields { found: 0 })
        );
        assert_eq!(
            parse_schedstat(b"12 34\n"),
            Err(SchedStatError::MissingFields { found: 2 })
        );
        assert_eq!(
            parse_schedstat(b"12 -4 5"),
            Err(SchedStatError::NotANumber { index: 1 })
        );
        assert_eq!(
            parse_schedstat(b"99999999999999999999999 1 1"),
            Err(SchedStatError::NotANumber { index: 0 })
        );
    }

    fn spin(d: Duration) {
        let end = Instant::now() + d;
        let mut x = 0u64;
        while Instant::now() < end {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    /// This thread's CPU time from the kernel's per-thread clock: a truth the
    /// meters under test do not use.
    fn thread_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the timespec we own.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// Spin until this thread has had `cpu` of CPU time (at most 20 s of wall time),
    /// so that the test means the same on an idle and on a crowded machine.
    fn spin_cpu(cpu: Duration) {
        let start = thread_cpu();
        let give_up = Instant::now() + Duration::from_secs(20);
        let mut x = 0u64;
        while thread_cpu() - start < cpu && Instant::now() < give_up {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
    }

    /// The clock sees this thread's CPU, not another thread's.
    #[test]
    fn thread_clock_counts_this_threads_cpu_only() {
        let c = ThreadClock::for_current_thread();
        if !c.has_wait() {
            eprintln!("{SCHEDSTAT_PATH} unreadable here: testing the getrusage fallback");
        }
        let a = c.read().unwrap();
        std::thread::spawn(|| spin(Duration::from_millis(150)))
            .join()
            .unwrap();
        let b = c.read().unwrap();
        spin_cpu(Duration::from_millis(60));
        let d = c.read().unwrap();
        assert!(
            b.cpu_ns - a.cpu_ns < 40_000_000,
            "another thread's spin was counted: {a:?} {b:?}"
        );
        // A spinning thread is always runnable: on a CPU or waiting for one (tests
        // run in parallel, so some of the spin may be run-queue wait).
        let on_or_waiting = d.cpu_ns - b.cpu_ns + d.wait_ns.unwrap_or(0) - b.wait_ns.unwrap_or(0);
        assert!(on_or_waiting >= 50_000_000, "{b:?} {d:?}");
        assert!(d.cpu_ns - b.cpu_ns >= 50_000_000, "{b:?} {d:?}");
        assert_eq!(d.wait_ns.is_some(), c.has_wait());
        // The fallback alone measures CPU too.
        let r0 = rusage_thread_cpu_ns().unwrap();
        spin_cpu(Duration::from_millis(40));
        assert!(rusage_thread_cpu_ns().unwrap() - r0 >= 30_000_000);
    }

    #[test]
    fn meter_reports_deltas_over_the_span() {
        let mut m = SelfMeter::start();
        // 50 ms of this thread's CPU, however long a crowded machine makes that take.
        spin_cpu(Duration::from_millis(50));
        let mut lag = LagHistogram::default();
        lag.record(1200);
        let g = m.interval(lag);
        assert!(g.cpu_ns >= 45_000_000, "{g:?}");
        assert!(g.wall_ns >= g.cpu_ns.saturating_sub(5_000_000), "{g:?}");
        if let Some(w) = g.wait_ns {
            // Running and waiting for a CPU never add up to more than the span. (Not
            // a lower bound: a virtual machine's stolen time is in neither.)
            assert!(g.cpu_ns + w <= g.wall_ns + 5_000_000, "{g:?}");
        }
        assert_eq!(g.lag.count(), 1);
        std::thread::sleep(Duration::from_millis(50));
        let idle = m.interval(LagHistogram::default());
        assert!(idle.busy() < 0.5, "{idle:?}");
    }
}

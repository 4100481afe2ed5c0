//! Where the service's capacity comes from: bounded pools that requests
//! queue for, and CPU work that really burns CPU.
//!
//! * [`Pool`] is a FIFO semaphore with the gauges a Spring Boot service
//!   exports for its thread pool and its HikariCP connection pool (active,
//!   pending, acquire time, usage time, timeouts). It can be resized while it
//!   runs, as an operator resizes HikariCP: permits in use beyond a smaller
//!   size are not taken away, they are not given out again once returned.
//!   A permit can also be leaked (taken and never given back) and the leaked
//!   ones returned at once, for the connection-leak fault and a restart.
//! * [`Cpu`] runs CPU-bound work (search scoring plus the synthetic cost per
//!   posting) on the blocking thread pool, so it competes for real cores
//!   while the async threads stay free for `/metrics`, `/health` and
//!   `/admin`. An optional CPU budget caps how many cores that work may use.
//! * [`db_query`] holds a connection for the query cost. The database is
//!   "another machine": the time is spent waiting (a precise thread sleep,
//!   not tokio's millisecond timer), so a pool of `n` connections serves at
//!   most `n / query_cost` queries per second on any machine.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, SemaphorePermit};

/// Why a pool permit could not be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcquireError {
    /// Waited longer than the pool's timeout (HikariCP's connectionTimeout).
    Timeout,
    /// The queue already holds the maximum number of waiters.
    QueueFull,
    /// The pool is closed (shutting down).
    Closed,
}

/// A bounded FIFO pool with usage statistics; see the module docs.
#[derive(Debug)]
pub(crate) struct Pool {
    sem: Semaphore,
    /// The pool's size now.
    max: AtomicUsize,
    /// Permits out (in use) beyond a size made smaller: each one returned is
    /// forgotten instead of given out again, until this is 0.
    debt: AtomicUsize,
    /// Permits taken by [`Pool::leak_one`] and never given back.
    leaked: AtomicUsize,
    waiting: AtomicUsize,
    acquired: AtomicU64,
    acquire_nanos: AtomicU64,
    usage_nanos: AtomicU64,
    released: AtomicU64,
    timeouts: AtomicU64,
    rejected: AtomicU64,
}

/// Snapshot of a pool for `/metrics`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PoolStats {
    pub max: usize,
    pub active: usize,
    pub pending: usize,
    /// Permits handed out (= completed acquisitions).
    pub acquired: u64,
    pub acquire_seconds: f64,
    /// Permits given back and the time they were held.
    pub released: u64,
    pub usage_seconds: f64,
    pub timeouts: u64,
    pub rejected: u64,
}

/// A held permit; gives it back (and records how long it was held) on drop.
#[derive(Debug)]
pub(crate) struct Permit<'a> {
    permit: Option<SemaphorePermit<'a>>,
    pool: &'a Pool,
    since: Instant,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let held = self.since.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        self.pool.usage_nanos.fetch_add(held, Ordering::Relaxed);
        self.pool.released.fetch_add(1, Ordering::Relaxed);
        if let Some(p) = self.permit.take() {
            if self.pool.pay_debt(1) == 0 {
                // The pool was made smaller while this was out: not given out again.
                p.forget();
            }
        }
    }
}

/// Decrements the waiter count however the wait ends (even if cancelled).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Pool {
    /// A pool of `max` permits (at least 1).
    pub(crate) fn new(max: usize) -> Pool {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Pool {
            sem: Semaphore::new(max),
            max: AtomicUsize::new(max),
            debt: AtomicUsize::new(0),
            leaked: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            acquired: AtomicU64::new(0),
            acquire_nanos: AtomicU64::new(0),
            usage_nanos: AtomicU64::new(0),
            released: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        }
    }

    /// Waits (FIFO) for a permit. `max_waiting == 0` means an unbounded
    /// queue; `timeout == None` means wait for ever. Returns the permit and
    /// how long the wait took.
    pub(crate) async fn acquire(
        &self,
        timeout: Option<Duration>,
        max_waiting: usize,
    ) -> Result<(Permit<'_>, Duration), AcquireError> {
        let start = Instant::now();
        let permit = match self.sem.try_acquire() {
            Ok(p) => p,
            Err(tokio::sync::TryAcquireError::Closed) => return Err(AcquireError::Closed),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                let before = self.waiting.fetch_add(1, Ordering::Relaxed);
                let _w = Waiting(&self.waiting);
                if max_waiting > 0 && before >= max_waiting {
                    self.rejected.fetch_add(1, Ordering::Relaxed);
                    return Err(AcquireError::QueueFull);
                }
                let acquired = match timeout {
                    Some(t) => match tokio::time::timeout(t, self.sem.acquire()).await {
                        Ok(r) => r,
                        Err(_) => {
                            self.timeouts.fetch_add(1, Ordering::Relaxed);
                            return Err(AcquireError::Timeout);
                        }
                    },
                    None => self.sem.acquire().await,
                };
                acquired.map_err(|_| AcquireError::Closed)?
            }
        };
        let waited = start.elapsed();
        self.acquired.fetch_add(1, Ordering::Relaxed);
        self.acquire_nanos.fetch_add(
            waited.as_nanos().min(u128::from(u64::MAX)) as u64,
            Ordering::Relaxed,
        );
        Ok((
            Permit {
                permit: Some(permit),
                pool: self,
                since: Instant::now(),
            },
            waited,
        ))
    }

    /// Takes up to `n` returned permits out of the debt a shrink left;
    /// returns how many of the `n` are left to give back to the semaphore.
    fn pay_debt(&self, n: usize) -> usize {
        let mut paid = 0;
        let _ = self
            .debt
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| {
                paid = d.min(n);
                Some(d - paid)
            });
        n - paid
    }

    /// Makes the pool `size` permits (at least 1) from now on. Growing adds
    /// permits at once (first cancelling what a shrink has not yet taken
    /// back); shrinking takes the free permits away at once and the ones in
    /// use as they are returned.
    pub(crate) fn resize(&self, size: usize) {
        let size = size.clamp(1, Semaphore::MAX_PERMITS);
        let old = self.max.swap(size, Ordering::AcqRel);
        if size > old {
            let add = self.pay_debt(size - old);
            if add > 0 {
                self.sem.add_permits(add);
            }
        } else if size < old {
            let remove = old - size;
            let forgotten = self.sem.forget_permits(remove);
            self.debt.fetch_add(remove - forgotten, Ordering::AcqRel);
        }
    }

    /// The pool's size now.
    pub(crate) fn size(&self) -> usize {
        self.max.load(Ordering::Acquire)
    }

    /// Takes one permit (waiting for it like any acquirer, FIFO) and never
    /// gives it back: a connection leak. It counts as active until
    /// [`return_leaked`](Self::return_leaked).
    pub(crate) async fn leak_one(&self) -> Result<(), AcquireError> {
        let permit = self.sem.acquire().await.map_err(|_| AcquireError::Closed)?;
        permit.forget();
        self.leaked.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Permits leaked so far and not returned.
    pub(crate) fn leaked(&self) -> usize {
        self.leaked.load(Ordering::Acquire)
    }

    /// Gives every leaked permit back (a restart closes leaked connections).
    pub(crate) fn return_leaked(&self) {
        let n = self.leaked.swap(0, Ordering::AcqRel);
        let add = self.pay_debt(n);
        if add > 0 {
            self.sem.add_permits(add);
        }
    }

    /// Current gauges and counters.
    pub(crate) fn stats(&self) -> PoolStats {
        let max = self.size();
        // Permits out = the size, plus those a shrink has yet to take back,
        // minus the free ones; leaked permits count as out (in use).
        let out =
            (max + self.debt.load(Ordering::Acquire)).saturating_sub(self.sem.available_permits());
        PoolStats {
            max,
            active: out,
            pending: self.waiting.load(Ordering::Relaxed),
            acquired: self.acquired.load(Ordering::Relaxed),
            acquire_seconds: self.acquire_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            released: self.released.load(Ordering::Relaxed),
            usage_seconds: self.usage_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            timeouts: self.timeouts.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
        }
    }

    /// Wakes every waiter with an error (shutdown).
    pub(crate) fn close(&self) {
        self.sem.close();
    }
}

/// Running estimate of how much longer than asked a query's wait takes
/// (hand-off to a blocking thread, timer slack, wake-ups: a few hundred µs
/// in some VMs), in ns.
static WAIT_OVERHEAD_NS: AtomicU64 = AtomicU64::new(100_000);

/// Holds a database connection for `cost`: the query runs "elsewhere", so
/// the time is waited, on a blocking thread (a thread sleep is far more
/// precise than tokio's millisecond timer). The sleep asked for is the cost
/// minus the usual overhead, kept up to date from what each wait really
/// took, so that a connection is held for the query cost on average and a
/// pool of `n` serves close to `n / cost` queries/s.
pub(crate) async fn db_query(cost: Duration) {
    if cost.is_zero() {
        return;
    }
    let start = Instant::now();
    let overhead = Duration::from_nanos(WAIT_OVERHEAD_NS.load(Ordering::Relaxed));
    let asked = cost.saturating_sub(overhead);
    let slept = if asked.is_zero() {
        tokio::task::yield_now().await;
        true
    } else {
        tokio::task::spawn_blocking(move || std::thread::sleep(asked))
            .await
            .is_ok()
    };
    if !slept {
        // The runtime is shutting down; fall back to the async timer.
        tokio::time::sleep(cost).await;
        return;
    }
    let observed = start.elapsed().saturating_sub(asked);
    let observed = observed.as_nanos().min(cost.as_nanos()).min(5_000_000) as u64;
    let old = WAIT_OVERHEAD_NS.load(Ordering::Relaxed);
    WAIT_OVERHEAD_NS.store((old * 15 + observed) / 16, Ordering::Relaxed);
}

/// Runs CPU-bound work; see the module docs for the CPU budget.
#[derive(Debug)]
pub(crate) struct Cpu {
    /// `(slots, duty)`: at most `slots` pieces of work run at once, each
    /// burning only `duty` of the wall time it takes (sleeping the rest).
    gate: Option<(Semaphore, f64)>,
    burned_nanos: AtomicU64,
}

impl Cpu {
    /// `budget` in cores (`None`: no limit beyond the worker pool).
    pub(crate) fn new(budget: Option<f64>) -> Cpu {
        let gate = budget.filter(|b| b.is_finite() && *b > 0.0).map(|b| {
            let slots = b.ceil().max(1.0);
            (Semaphore::new(slots as usize), (b / slots).clamp(0.01, 1.0))
        });
        Cpu {
            gate,
            burned_nanos: AtomicU64::new(0),
        }
    }

    /// Runs `f` on the blocking pool, then burns the CPU time it asks for.
    /// `None` if the runtime is shutting down.
    pub(crate) async fn run<R, F>(&self, f: F) -> Option<R>
    where
        F: FnOnce() -> (R, Duration) + Send + 'static,
        R: Send + 'static,
    {
        let (_slot, duty) = match &self.gate {
            Some((sem, duty)) => (Some(sem.acquire().await.ok()?), *duty),
            None => (None, 1.0),
        };
        let (r, burned) = tokio::task::spawn_blocking(move || {
            let (r, cost) = f();
            burn(cost, duty);
            (r, cost)
        })
        .await
        .ok()?;
        self.burned_nanos.fetch_add(
            burned.as_nanos().min(u128::from(u64::MAX)) as u64,
            Ordering::Relaxed,
        );
        Some(r)
    }

    /// Synthetic CPU seconds burned so far.
    pub(crate) fn burned_seconds(&self) -> f64 {
        self.burned_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }
}

/// CPU time this thread has used (falls back to wall time where there is no
/// per-thread CPU clock).
fn thread_cpu_time() -> Option<Duration> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc == 0 {
            return Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
        }
    }
    None
}

/// Spins until this thread has used `d` of CPU time (wall time if there is
/// no thread CPU clock). Measuring CPU time rather than wall time is what
/// makes contention real: with more spinning threads than cores, each takes
/// longer in wall time, exactly like real CPU-bound code.
fn spin(d: Duration) {
    let wall = Instant::now();
    let start = thread_cpu_time();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    loop {
        for _ in 0..256 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        }
        std::hint::black_box(x);
        let used = match (start, thread_cpu_time()) {
            (Some(s), Some(now)) => now.saturating_sub(s),
            _ => wall.elapsed(),
        };
        if used >= d {
            return;
        }
    }
}

/// Burns `cost` of CPU, in slices; with `duty < 1` each slice is followed by
/// a sleep so that the work uses only `duty` of a core.
pub(crate) fn burn(cost: Duration, duty: f64) {
    const SLICE: Duration = Duration::from_micros(500);
    let mut left = cost;
    while !left.is_zero() {
        let this = left.min(SLICE);
        spin(this);
        left -= this;
        if duty < 1.0 {
            std::thread::sleep(this.mul_f64(1.0 / duty - 1.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burn_uses_cpu_time() {
        let t = Instant::now();
        let c0 = thread_cpu_time();
        burn(Duration::from_millis(20), 1.0);
        let wall = t.elapsed();
        assert!(wall >= Duration::from_millis(20), "{wall:?}");
        if let (Some(a), Some(b)) = (c0, thread_cpu_time()) {
            assert!(b - a >= Duration::from_millis(20));
        }
    }

    #[test]
    fn duty_cycle_stretches_wall_time() {
        let t = Instant::now();
        burn(Duration::from_millis(10), 0.5);
        assert!(
            t.elapsed() >= Duration::from_millis(19),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn pool_counts_and_times_out() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let pool = Pool::new(1);
            let (p, waited) = pool.acquire(None, 0).await.unwrap();
            assert!(waited < Duration::from_millis(50));
            assert_eq!(pool.stats().active, 1);
            let e = pool
                .acquire(Some(Duration::from_millis(20)), 0)
                .await
                .unwrap_err();
            assert_eq!(e, AcquireError::Timeout);
            assert_eq!(pool.stats().pending, 0);
            drop(p);
            let s = pool.stats();
            assert_eq!((s.active, s.acquired, s.released, s.timeouts), (0, 1, 1, 1));
            let _p = pool.acquire(None, 1).await.unwrap();
            // One waiter allowed; the queue is empty, so this one times out
            // rather than being rejected.
            assert_eq!(
                pool.acquire(Some(Duration::from_millis(5)), 1)
                    .await
                    .unwrap_err(),
                AcquireError::Timeout
            );
        });
    }
}

//! The service itself. This module holds the shared state ([`App`]: data, index,
//! pools, caches, faults, counters) and what every handler uses on it; the rest
//! sits in one module per concern:
//!
//! - [`connection`]: serving connections (each told HTTP/1.1, h2c or TLS by its
//!   first bytes), the background tickers.
//! - [`h2`]: HTTP/2 connections (h2c, or TLS with ALPN `h2`) on hyper, plain
//!   requests through the same dispatch, gRPC calls to [`grpc`].
//! - [`grpc`]: the `pado.board.Board` gRPC service with server reflection.
//! - [`websocket`]: `/ws/echo` and `/ws/feed`, upgraded from HTTP/1.1.
//! - [`compression`]: gzip, br or zstd answers as `Accept-Encoding` asks.
//! - [`restart`]: the restart fault: the listener closed and bound again, the
//!   state a process restart loses.
//! - [`routing`]: method and path to a route; the dispatch with faults and the
//!   worker pool.
//! - [`auth`], [`search`], [`posts`]: the API's handlers by endpoint family.
//! - [`chat`]: the LLM's routes (`/v1/chat/completions`), streamed or whole.
//! - [`management`]: `/health`, `/metrics`, `/admin/faults`.
//! - [`response`]: the response a handler returns.

use pado_base::lock;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use crate::cache::Cache;
use crate::capacity::{db_query, AcquireError, Cpu, Pool};
use crate::data::{self, Store};
use crate::index::Index;
use crate::leak::Leak;
use crate::llm::Llm;
use crate::metrics::{CpuSampler, HttpMetrics};
use crate::{Faults, TargetOptions};

mod auth;
mod chat;
mod compression;
mod connection;
mod grpc;
mod h2;
mod management;
mod posts;
mod response;
mod restart;
mod routing;
mod search;
mod websocket;

use auth::Tokens;
pub(crate) use connection::serve;
use response::Response;

/// Everything the handlers share.
pub(crate) struct App {
    opts: TargetOptions,
    store: RwLock<Store>,
    index: Arc<RwLock<Index>>,
    tokens: Mutex<Tokens>,
    workers: Pool,
    db: Pool,
    cpu: Cpu,
    /// The demo LLM behind `/v1/chat/completions`: its batch, pacing and counters.
    llm: Llm,
    details: Cache<u64, Arc<[u8]>>,
    searches: Cache<String, Arc<[u8]>>,
    faults: Mutex<Faults>,
    faults_changed: Notify,
    /// Wakes the pool-leak ticker when the faults change.
    pool_leak_changed: Notify,
    stalled_until: Mutex<Option<Instant>>,
    /// A restart asked for and not yet begun: how long the listener stays closed.
    restart_pending: Mutex<Option<Duration>>,
    restart_wanted: Notify,
    restarts: AtomicU64,
    leak: Leak,
    http: HttpMetrics,
    sampler: CpuSampler,
    /// When the service (re)started: monotonic, and in unix seconds.
    started: Mutex<(Instant, f64)>,
    connections: AtomicUsize,
    connections_total: AtomicU64,
    searches_run: AtomicU64,
    postings_walked: AtomicU64,
    /// With `--tls`: the acceptor of TLS connections (a self-signed certificate,
    /// ALPN `h2` then `http/1.1`).
    tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Seconds since the Unix epoch (0 on a clock before it).
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl App {
    pub(crate) fn new(
        opts: TargetOptions,
        thread_prefix: Option<&'static str>,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> App {
        let generated = data::generate(opts.posts, opts.seed);
        let index = Index::from_generated(&generated);
        let store = generated.store;
        let cache_size = opts.cache_size;
        let db = Pool::new(opts.pool_size);
        if opts.faults.pool_size > 0 {
            db.resize(opts.faults.pool_size as usize);
        }
        let workers = Pool::new(opts.workers);
        if opts.faults.workers > 0 {
            workers.resize(opts.faults.workers as usize);
        }
        App {
            workers,
            db,
            cpu: Cpu::new(opts.cpu_budget),
            llm: Llm::new(&opts.faults),
            details: Cache::new(cache_size, None),
            searches: Cache::new(cache_size, Some(opts.search_cache_ttl)),
            faults: Mutex::new(opts.faults.clone()),
            faults_changed: Notify::new(),
            pool_leak_changed: Notify::new(),
            stalled_until: Mutex::new(None),
            restart_pending: Mutex::new(None),
            restart_wanted: Notify::new(),
            restarts: AtomicU64::new(0),
            leak: Leak::default(),
            store: RwLock::new(store),
            index: Arc::new(RwLock::new(index)),
            tokens: Mutex::new(Tokens::default()),
            http: HttpMetrics::default(),
            sampler: CpuSampler::new(thread_prefix),
            started: Mutex::new((Instant::now(), unix_now())),
            connections: AtomicUsize::new(0),
            connections_total: AtomicU64::new(0),
            searches_run: AtomicU64::new(0),
            postings_walked: AtomicU64::new(0),
            tls,
            opts,
        }
    }

    pub(crate) fn faults(&self) -> Faults {
        lock(&self.faults).clone()
    }

    /// Changes the faults, a restart among them at once (the library's
    /// handle; `POST /admin/faults` restarts only once its answer is written).
    pub(crate) fn set_faults(&self, faults: Faults) -> Result<(), String> {
        if let Some(restart) = self.apply_faults(faults)? {
            self.request_restart(restart);
        }
        Ok(())
    }

    /// Validates and applies `faults`; returns the restart they ask for, which
    /// the caller starts with [`request_restart`](Self::request_restart)
    /// (`restart_ms` itself is stored as 0: it is an action, not a state).
    fn apply_faults(&self, mut faults: Faults) -> Result<Option<Duration>, String> {
        faults.validate()?;
        let once = faults.stall_ms > 0 && faults.stall_every_s == 0.0;
        let stall = Duration::from_millis(faults.stall_ms);
        let restart = (faults.restart_ms > 0).then(|| Duration::from_millis(faults.restart_ms));
        faults.restart_ms = 0;
        self.db.resize(match faults.pool_size {
            0 => self.opts.pool_size,
            n => n as usize,
        });
        self.workers.resize(match faults.workers {
            0 => self.opts.workers,
            n => n as usize,
        });
        self.llm.apply(&faults);
        *lock(&self.faults) = faults;
        if once {
            self.stall_now(stall);
        }
        self.faults_changed.notify_one();
        self.pool_leak_changed.notify_one();
        Ok(restart)
    }

    pub(crate) fn requests_served(&self) -> u64 {
        self.http.total()
    }

    fn stall_now(&self, len: Duration) {
        let until = Instant::now() + len;
        let mut s = lock(&self.stalled_until);
        if s.is_none_or_before(until) {
            *s = Some(until);
        }
    }

    /// Waits while a stall is in force.
    async fn wait_stall(&self) {
        loop {
            let until = *lock(&self.stalled_until);
            match until {
                Some(u) if u > Instant::now() => {
                    tokio::time::sleep_until(tokio::time::Instant::from_std(u)).await
                }
                _ => return,
            }
        }
    }

    fn cache_enabled(&self) -> bool {
        lock(&self.faults).cache
    }

    /// Holds a DB connection for one query, then runs `f` (the data access).
    async fn query<R>(&self, f: impl FnOnce() -> R) -> Result<R, Response> {
        let (_conn, _waited) = match self.db.acquire(Some(self.opts.pool_timeout), 0).await {
            Ok(c) => c,
            Err(AcquireError::Timeout) => {
                return Err(Response::error(
                    500,
                    "could not get a database connection in time (pool exhausted)",
                ))
            }
            Err(_) => return Err(Response::error(503, "shutting down")),
        };
        db_query(self.opts.query_cost).await;
        Ok(f())
    }
}

/// `Option<Instant>` helper: whether a new stall end extends the current one.
trait StallEnd {
    fn is_none_or_before(&self, t: Instant) -> bool;
}

impl StallEnd for Option<Instant> {
    fn is_none_or_before(&self, t: Instant) -> bool {
        match self {
            None => true,
            Some(cur) => *cur < t,
        }
    }
}

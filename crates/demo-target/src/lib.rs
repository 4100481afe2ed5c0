//! The demo service `pado demo` and `pado target serve` run: a small
//! wiki/board JSON API whose capacity is real and tunable, so that a load
//! test against it shows what load tests of real services show — past its
//! capacity, throughput plateaus while queues and tail latency explode
//! ("대기열 눈사태", the queueing avalanche), and it recovers when load drops.
//!
//! It is modelled on a Spring Boot wiki service (Lucene search, MySQL through
//! HikariCP, a cache, Tomcat's worker threads) and exports the metric names
//! such a service exports, so pado's analysis can be tried on it end to end
//! without any other software.
//!
//! # Endpoints
//!
//! | route | what it does | capacity it uses |
//! |---|---|---|
//! | `POST /api/login` `{"user","password"}` | `{"token"}` for any non-empty user (else 401) | worker + DB query |
//! | `GET /api/search?q=` | BM25 over an inverted index; top 10 `{id,title,score}` and `total` | worker + CPU ∝ postings walked (cached) |
//! | `GET /api/autocomplete?prefix=` | terms (most frequent first) and titles starting with the prefix | worker + CPU ∝ candidates |
//! | `GET /api/posts?page=&size=` | newest first, `size` ≤ 100 | worker + DB query |
//! | `GET /api/posts/{id}` | detail, 404 if missing | worker + DB query (cached) |
//! | `POST /api/posts` (auth) `{"title","body","tags"?}` | 201 `{"id"}` | worker + DB query |
//! | `POST /api/posts/{id}/like` (auth) | `{"id","likes"}` | worker + DB query |
//! | `DELETE /api/posts/{id}` (auth) | 204 | worker + DB query |
//! | `POST /v1/chat/completions` (also `/v1/completions`) | an OpenAI-compatible LLM answer, streamed as Server-Sent Events with `stream: true` (`usage` with `stream_options: {include_usage: true}`), `max_tokens` tokens long | a place in the LLM's batch; prefill and decode timers (see `llm`) |
//! | `GET /health` (also `/actuator/health`) | `{"status":"UP"}` | none |
//! | `GET /metrics` (also `/actuator/prometheus`) | Prometheus text | none |
//! | `GET`/`POST /admin/faults` | current [`Faults`] / change them | none |
//!
//! # Protocols
//!
//! One port speaks everything pado speaks, each connection told by its first
//! bytes: HTTP/1.1; HTTP/2 over cleartext (h2c, prior knowledge); with
//! [`TargetOptions::tls`], TLS with a self-signed certificate, ALPN choosing `h2`
//! or `http/1.1`; WebSocket (`/ws/echo`, `/ws/feed`) upgraded from HTTP/1.1; gRPC
//! over HTTP/2 (`pado.board.Board`, [`BOARD_PROTO`], with server reflection). API
//! answers are gzip, br or zstd encoded when `Accept-Encoding` asks. Every HTTP/2
//! request and gRPC call goes through the same routes, pools and metrics as an
//! HTTP/1.1 request.
//!
//! The management endpoints share the API's port: while a restart
//! ([`Faults::restart_ms`]) lasts they are down too.
//!
//! "auth" is `Authorization: Bearer <token>` from `/api/login` (401
//! without). Bad JSON is a 400, an id that is not a number or not a post is
//! a 404, a wrong method is a 405; nothing a client sends panics the server.
//!
//! # Capacity model
//!
//! Every request to an API route (and any unknown path) first waits, FIFO,
//! for one of [`TargetOptions::workers`] worker permits and keeps it until
//! its response is ready — Tomcat's thread-per-request. While holding it:
//!
//! * **DB-touching handlers** (login, list, detail on a cache miss, create,
//!   like, delete) wait for one of [`TargetOptions::pool_size`] connections
//!   and hold it for [`TargetOptions::query_cost`] — the database is another
//!   machine, so that time is waited, not burned. A pool of `n` connections
//!   therefore serves at most `n / query_cost` queries/s ([`capacity_hint`]),
//!   on any machine.
//! * **Search and autocomplete** do their real index work plus
//!   [`TargetOptions::posting_cost`] of CPU per posting walked — a frequent
//!   term like `검색` walks far more postings than a rare one, so it costs
//!   more, as in the seed post. That CPU is really burned (measured with the
//!   thread's CPU clock), on blocking threads, so it competes for the
//!   machine's cores; [`TargetOptions::cpu_budget`] caps how many cores it
//!   may use.
//! * **Caches**: post details and search results go through an LRU-ish
//!   in-process cache of [`TargetOptions::cache_size`] entries each; a hit
//!   skips the DB query or the scoring.
//!
//! Offered load beyond capacity therefore queues for a worker or a
//! connection: throughput stays at the plateau, latency grows with the
//! queue (Little's law), and `executor_queued_tasks` /
//! `hikaricp_connections_pending` show where.
//!
//! # Metrics (`GET /metrics`, also `/actuator/prometheus`)
//!
//! Spring-Boot-like names, so what pado learns to read here carries over:
//!
//! * `http_server_requests_seconds` — histogram (`_bucket`, `_count`,
//!   `_sum`, plus a `_max` gauge) with labels `method`, `uri` (the route
//!   template: `/api/posts/{id}`, `/api/search`, … or `NOT_FOUND` for
//!   unknown paths), `status` and `outcome` (`SUCCESS`, `CLIENT_ERROR`, …).
//!   Only API routes and unknown paths are counted; `/metrics`, `/health`
//!   and `/admin/*` are not (as with a separate management port), nor are
//!   requests too malformed to route (answered 400/413/431 and closed). A
//!   request is recorded before its response is written, so the counts are
//!   exact: a client that has read N responses and then scrapes sees N.
//! * `process_cpu_usage` (whole process, fraction of all available cores,
//!   from `/proc/self/stat` deltas once a second), `system_cpu_usage`,
//!   `system_cpu_count`, `process_cpu_seconds_total`,
//!   `process_uptime_seconds`, `process_start_time_seconds` (both from the
//!   last restart, see [`Faults::restart_ms`]); `process_resident_memory_bytes`
//!   and `process_virtual_memory_bytes` (`/proc/self/statm` × page size),
//!   `process_open_fds` (entries of `/proc/self/fd`), `process_max_fds`
//!   (`RLIMIT_NOFILE`), each left out when it cannot be read; and, when the
//!   service runs on its own runtime ([`start`], [`run_until_ctrl_c`]),
//!   `pado_target_cpu_usage`: its own threads only, which is what matters
//!   when `pado demo` runs the load generator in the same process.
//! * `hikaricp_connections_{active,idle,pending,max,min}`,
//!   `hikaricp_connections`, `hikaricp_connections_acquire_seconds` and
//!   `hikaricp_connections_usage_seconds` (summaries: `_count`, `_sum`),
//!   `hikaricp_connections_timeout_total` — label `pool="HikariPool-1"`.
//! * `executor_active_threads`, `executor_queued_tasks`,
//!   `executor_pool_max_threads`, `executor_pool_size_threads`,
//!   `executor_completed_tasks_total`, `executor_queue_wait_seconds`
//!   (summary), `executor_rejected_tasks_total` — the worker pool, label
//!   `name="http"`.
//! * `cache_gets_total{result="hit|miss"}`, `cache_puts_total`,
//!   `cache_evictions_total`, `cache_size`, `cache_max_size` — label
//!   `cache="posts"` (details) or `cache="search"`.
//! * vLLM's names for the LLM (label `model_name`): `vllm:num_requests_running`,
//!   `vllm:num_requests_waiting`, `vllm:gpu_cache_usage_perc`,
//!   `vllm:kv_cache_usage_perc`, `vllm:time_to_first_token_seconds` (histogram),
//!   `vllm:prompt_tokens_total`, `vllm:generation_tokens_total`,
//!   `vllm:request_success_total`.
//! * `pado_target_posts`, `pado_target_searches_total`,
//!   `pado_target_search_postings_total`, `pado_target_cpu_work_seconds_total`,
//!   `pado_target_connections`, `pado_target_connections_total`,
//!   `pado_target_leaked_bytes` (what [`Faults::leak_kib_per_request`]
//!   holds), `pado_target_pool_leaked_connections`
//!   ([`Faults::pool_leak_every_s`]), `pado_target_restarts_total`,
//!   `pado_target_fault{fault=...}` (every field of [`Faults`], `cache` as
//!   `cache_disabled`).
//!
//! # Binding
//!
//! The service binds `127.0.0.1` by default and refuses any non-loopback
//! address unless [`TargetOptions::allow_remote`] is set: it is a load
//! target with fault injection and no real authentication.

#![warn(missing_docs)]

use std::future::Future;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod app;
mod cache;
mod capacity;
mod data;
use pado_h1server as http;
mod index;
mod leak;
mod llm;
mod metrics;

use app::App;

/// `proto/board.proto`: the gRPC service the target serves (`pado.board.Board`:
/// `GetPost`, and `ListPosts` streaming a page of posts). Clients can also learn it
/// from the server's reflection service.
pub const BOARD_PROTO: &str = include_str!("../proto/board.proto");

/// Faults that can be switched on and off while the service runs
/// (`POST /admin/faults`, [`RunningTarget::set_faults`]) or set at start
/// ([`TargetOptions::faults`]). They affect API routes only, never
/// `/metrics`, `/health` or `/admin/*`, so a test can always observe them.
///
/// Posting a partial JSON object to `/admin/faults` changes only the fields
/// it names; unknown fields are a 400.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Extra delay added to every API response, in ms. It is added after the
    /// handler has released its worker and connection — like a slow
    /// network, it raises latency without using capacity. It is included in
    /// `http_server_requests_seconds`.
    pub added_latency_ms: u64,
    /// Fraction (0..=1) of API requests answered `500` at once, before they
    /// take a worker (an upstream failure). 1.0 fails every API call.
    pub error_rate: f64,
    /// Length of a stop-the-world stall, in ms, like a long GC pause: while
    /// it lasts, no API request starts or finishes (requests in flight are
    /// held before their response is written).
    pub stall_ms: u64,
    /// Period of the stalls, in seconds: every `stall_every_s` the service
    /// stalls for `stall_ms`. With 0, a non-zero `stall_ms` stalls once, at
    /// the moment the faults are applied.
    pub stall_every_s: f64,
    /// Whether the post-detail and search caches are used. `false` makes
    /// every lookup a miss (counted as `cache_gets_total{result="miss"}`),
    /// sending all the load to the DB pool and the CPU.
    pub cache: bool,
    /// The DB connection pool's size from now on, as an operator resizing
    /// HikariCP at run time would; 0 (the default) is the configured
    /// [`TargetOptions::pool_size`]. Connections in use beyond a smaller size
    /// are not taken away: they finish their query and are not given out
    /// again. `hikaricp_connections_max` and `_idle` follow the size.
    pub pool_size: u32,
    /// The worker permits from now on (how many API requests are handled at
    /// once), as an operator changing Tomcat's `threads.max` would; 0 (the
    /// default) is the configured [`TargetOptions::workers`]. Workers busy
    /// beyond a smaller count finish their request and are not given out
    /// again. `executor_pool_max_threads` follows, so the bottleneck table sees
    /// the new limit; with [`pool_size`](Self::pool_size) it is the knob an
    /// experiment turns to move the limit from the pool to the CPU.
    pub workers: u32,
    /// Posting a non-zero value restarts the service in place, like a process
    /// restart: every open connection is closed at once (requests in flight
    /// get no response), the listener is closed for `restart_ms` (clients see
    /// "connection refused"; `/metrics` and `/admin` are down too, being on
    /// the same listener), then it listens again on the same port with cold
    /// caches, the [`leak_kib_per_request`](Self::leak_kib_per_request) memory
    /// freed, pool-leaked connections returned and
    /// `process_start_time_seconds` reset. One-shot: it reads back 0 (in
    /// `GET /admin/faults`, the `POST`'s answer, written before the restart
    /// starts, and [`RunningTarget::faults`]). The other faults stay as they
    /// were, and so do the data, the tokens and the request counters. Refused
    /// in [`TargetOptions::faults`].
    pub restart_ms: u64,
    /// Every API request retains this many KiB for good (really allocated
    /// and written, so resident memory grows), until a restart frees it; at
    /// most 1 GiB in all. Setting 0 stops the growth and frees nothing.
    /// `pado_target_leaked_bytes` shows what the leak holds.
    pub leak_kib_per_request: u64,
    /// Every API request waits this many µs per MiB the leak holds, after
    /// releasing its worker (like `added_latency_ms`, latency rises without
    /// using capacity), as a filling heap makes collections longer.
    pub leak_creep_us_per_mib: u64,
    /// Every `pool_leak_every_s` seconds one DB connection is taken from the
    /// pool and never given back (a connection leak), until a restart: at a
    /// steady load `hikaricp_connections_active` climbs step by step and, once
    /// every connection has leaked, DB requests time out. 0 (the default) is
    /// off.
    pub pool_leak_every_s: f64,
    /// The demo LLM's batch limit (`/v1/chat/completions`): at most this many
    /// generations run at once, like vLLM's `max_num_seqs` or a GPU's KV cache;
    /// the rest wait in a queue (`vllm:num_requests_waiting`), their first token
    /// with them. Default 8. A smaller limit takes effect as running generations
    /// finish, a larger one at once.
    pub llm_batch_limit: u32,
    /// The prefill's cost: time before a request's first token per 1,000 prompt
    /// tokens, in ms (default 50), so longer prompts wait longer for it.
    pub llm_prefill_ms_per_1k_tokens: f64,
    /// Time of one generated token with the batch to itself, in ms (default 20:
    /// 50 tokens/s for a lone stream).
    pub llm_decode_ms_per_token: f64,
    /// How much slower each token gets per other generation in the batch
    /// (default 0.02: with 8 running, a token takes 1.14 × the decode time), so
    /// tokens per second per stream fall as the batch fills.
    pub llm_batch_slowdown: f64,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            added_latency_ms: 0,
            error_rate: 0.0,
            stall_ms: 0,
            stall_every_s: 0.0,
            cache: true,
            pool_size: 0,
            workers: 0,
            restart_ms: 0,
            leak_kib_per_request: 0,
            leak_creep_us_per_mib: 0,
            pool_leak_every_s: 0.0,
            llm_batch_limit: 8,
            llm_prefill_ms_per_1k_tokens: 50.0,
            llm_decode_ms_per_token: 20.0,
            llm_batch_slowdown: 0.02,
        }
    }
}

impl Faults {
    /// Checks the ranges (error rate in 0..=1, delays at most 10 minutes,
    /// pool size and workers at most 10000, a leak of at most 1 MiB per request and 1 s
    /// of creep per MiB, finite numbers), so that bad values are refused
    /// rather than clamped in surprising ways.
    pub fn validate(&self) -> Result<(), String> {
        const MAX_MS: u64 = 600_000;
        if !self.error_rate.is_finite() || !(0.0..=1.0).contains(&self.error_rate) {
            return Err(format!(
                "error_rate must be between 0 and 1, got {}",
                self.error_rate
            ));
        }
        if self.added_latency_ms > MAX_MS {
            return Err(format!("added_latency_ms must be at most {MAX_MS}"));
        }
        if self.stall_ms > MAX_MS {
            return Err(format!("stall_ms must be at most {MAX_MS}"));
        }
        if !self.stall_every_s.is_finite() || !(0.0..=86_400.0).contains(&self.stall_every_s) {
            return Err(format!(
                "stall_every_s must be between 0 and 86400, got {}",
                self.stall_every_s
            ));
        }
        if self.stall_every_s > 0.0 && self.stall_every_s < 0.01 {
            return Err("stall_every_s must be 0 or at least 0.01".to_string());
        }
        if self.pool_size > 10_000 {
            return Err(format!(
                "pool_size must be at most 10000 (0 restores the configured size), got {}",
                self.pool_size
            ));
        }
        if self.workers > 10_000 {
            return Err(format!(
                "workers must be at most 10000 (0 restores the configured count), got {}",
                self.workers
            ));
        }
        if self.restart_ms > MAX_MS {
            return Err(format!("restart_ms must be at most {MAX_MS}"));
        }
        if self.leak_kib_per_request > 1024 {
            return Err(format!(
                "leak_kib_per_request must be at most 1024 (1 MiB), got {}",
                self.leak_kib_per_request
            ));
        }
        if !(1..=10_000).contains(&self.llm_batch_limit) {
            return Err(format!(
                "llm_batch_limit must be between 1 and 10000, got {}",
                self.llm_batch_limit
            ));
        }
        let ms_ok = |v: f64| v.is_finite() && (0.0..=60_000.0).contains(&v);
        if !ms_ok(self.llm_prefill_ms_per_1k_tokens) {
            return Err(format!(
                "llm_prefill_ms_per_1k_tokens must be between 0 and 60000, got {}",
                self.llm_prefill_ms_per_1k_tokens
            ));
        }
        if !ms_ok(self.llm_decode_ms_per_token) {
            return Err(format!(
                "llm_decode_ms_per_token must be between 0 and 60000, got {}",
                self.llm_decode_ms_per_token
            ));
        }
        if !self.llm_batch_slowdown.is_finite() || !(0.0..=10.0).contains(&self.llm_batch_slowdown)
        {
            return Err(format!(
                "llm_batch_slowdown must be between 0 and 10, got {}",
                self.llm_batch_slowdown
            ));
        }
        if self.leak_creep_us_per_mib > 1_000_000 {
            return Err(format!(
                "leak_creep_us_per_mib must be at most 1000000 (1 s per MiB), got {}",
                self.leak_creep_us_per_mib
            ));
        }
        if !self.pool_leak_every_s.is_finite()
            || !(0.0..=86_400.0).contains(&self.pool_leak_every_s)
        {
            return Err(format!(
                "pool_leak_every_s must be between 0 and 86400, got {}",
                self.pool_leak_every_s
            ));
        }
        if self.pool_leak_every_s > 0.0 && self.pool_leak_every_s < 0.01 {
            return Err("pool_leak_every_s must be 0 or at least 0.01".to_string());
        }
        Ok(())
    }
}

/// How to run the service. Build with `..Default::default()` so that new
/// options do not break callers.
#[derive(Clone, Debug)]
pub struct TargetOptions {
    /// TCP port; 0 (the default) lets the OS pick a free one — read it back
    /// with [`RunningTarget::addr`] / [`Server::local_addr`].
    pub port: u16,
    /// Address or host name to bind (default `127.0.0.1`). Anything that
    /// resolves to a non-loopback address is refused unless
    /// [`allow_remote`](Self::allow_remote) is set.
    pub host: String,
    /// Allow binding a non-loopback address (default `false`): the service
    /// has fault injection and no real authentication, so exposing it must
    /// be a deliberate choice.
    pub allow_remote: bool,
    /// Worker permits (default 4): how many API requests are handled at
    /// once; the rest wait in a FIFO queue. Like Tomcat's `threads.max`.
    pub workers: usize,
    /// Most requests that may wait for a worker; beyond it a request is
    /// answered `503` at once. 0 (the default) is an unbounded queue.
    pub max_queue: usize,
    /// Database connections (default 8), like HikariCP's
    /// `maximumPoolSize`. A worker holds its permit while it waits for a
    /// connection, so the DB can only be the bottleneck when
    /// `pool_size < workers` or when search load leaves workers free.
    pub pool_size: usize,
    /// How long a request waits for a connection before failing with `500`
    /// (HikariCP's `connectionTimeout`, default 30 s).
    pub pool_timeout: Duration,
    /// How long every DB query holds its connection (default 2 ms).
    pub query_cost: Duration,
    /// CPU burned per posting walked by search (and per candidate examined
    /// by autocomplete), default 1 µs: with 20,000 posts a query for the most
    /// frequent term (`검색`, in nearly every post) costs about 20 ms of CPU,
    /// a rare term well under 1 ms.
    pub posting_cost: Duration,
    /// Cores the CPU-bound work (search, autocomplete) may use at once;
    /// `None` (the default) is no limit beyond the worker pool and the
    /// machine. With `Some(b)`, at most `ceil(b)` pieces of work run at
    /// once, each burning CPU only `b / ceil(b)` of its wall time (sleeping
    /// the rest), so they never use more than `b` cores: 0.5 behaves like
    /// half a core, 2 like a two-core box. See [`parse_cpu_budget`].
    pub cpu_budget: Option<f64>,
    /// Entries in each of the two caches (post details, search results),
    /// default 1,000; 0 disables caching.
    pub cache_size: usize,
    /// How long a cached search result is served (default 10 s): writes do
    /// not invalidate search results (like an eventually consistent search
    /// index), so a new post may take this long to appear in a cached query.
    /// Post details are invalidated by writes and do not expire.
    pub search_cache_ttl: Duration,
    /// Posts generated at start (default 20,000).
    pub posts: usize,
    /// Seed of the generated data (default 42): the same seed gives the
    /// same posts, so runs are comparable.
    pub seed: u64,
    /// Faults active from the start.
    pub faults: Faults,
    /// Also accept TLS on the port (default `false`): a self-signed certificate
    /// for `localhost` and `127.0.0.1` made at start, ALPN offering `h2` then
    /// `http/1.1`, so HTTP/2 over TLS can be tried without a certificate of one's
    /// own (clients need `insecure`). Plain connections are still served.
    pub tls: bool,
}

impl Default for TargetOptions {
    fn default() -> Self {
        TargetOptions {
            port: 0,
            host: "127.0.0.1".to_string(),
            allow_remote: false,
            workers: 4,
            max_queue: 0,
            pool_size: 8,
            pool_timeout: Duration::from_secs(30),
            query_cost: Duration::from_micros(2_000),
            posting_cost: Duration::from_micros(1),
            cpu_budget: None,
            cache_size: 1_000,
            search_cache_ttl: Duration::from_secs(10),
            posts: 20_000,
            seed: 42,
            faults: Faults::default(),
            tls: false,
        }
    }
}

/// Most posts that may be generated (memory and start-up time stay modest).
pub const MAX_POSTS: usize = 2_000_000;

impl TargetOptions {
    /// Sets the entries of each cache; 0 turns caching off, as the `cache` fault
    /// does (so `/metrics` says `cache_disabled` and every lookup is a miss).
    pub fn set_cache_size(&mut self, entries: usize) {
        self.cache_size = entries;
        self.faults.cache = entries > 0;
    }

    /// Checks the options, so that [`start`] fails with a clear
    /// `InvalidInput` error instead of running a service that cannot work.
    pub fn validate(&self) -> Result<(), String> {
        if self.workers == 0 {
            return Err("workers must be at least 1".to_string());
        }
        if self.pool_size == 0 {
            return Err("pool size must be at least 1".to_string());
        }
        if self.workers > 10_000 || self.pool_size > 10_000 {
            return Err("workers and pool size must be at most 10000".to_string());
        }
        if self.posts > MAX_POSTS {
            return Err(format!("posts must be at most {MAX_POSTS}"));
        }
        if let Some(b) = self.cpu_budget {
            if !b.is_finite() || b <= 0.0 || b > 1024.0 {
                return Err(format!(
                    "cpu budget must be a positive number of cores, got {b}"
                ));
            }
        }
        if self.query_cost > Duration::from_secs(60) || self.posting_cost > Duration::from_secs(1) {
            return Err("query cost must be at most 60 s and posting cost at most 1 s".to_string());
        }
        if self.faults.restart_ms > 0 {
            return Err(
                "faults.restart_ms restarts a running service; it cannot be set at start"
                    .to_string(),
            );
        }
        self.faults.validate()
    }
}

/// Parses a `--cpu-budget` value: a number of cores (`0.5`, `2`) or a
/// percentage of this machine's available cores (`50%`). Kept here so the
/// CLI and the docs agree on one meaning.
pub fn parse_cpu_budget(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let cores = if let Some(p) = s.strip_suffix('%') {
        let pct: f64 = p.trim().parse().map_err(|_| {
            format!("invalid CPU budget {s:?}: expected cores (0.5, 2) or a percentage (50%)")
        })?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        pct / 100.0 * cpus
    } else {
        s.parse().map_err(|_| {
            format!("invalid CPU budget {s:?}: expected cores (0.5, 2) or a percentage (50%)")
        })?
    };
    if !cores.is_finite() || cores <= 0.0 {
        return Err(format!("CPU budget must be positive, got {s:?}"));
    }
    Ok(cores)
}

/// Requests per second the service can serve for post details that miss the
/// cache: `min(workers, pool_size) / query_cost` (a worker keeps its permit
/// while it waits for a connection, so the smaller pool is the limit).
/// Infinite when `query_cost` is zero. Tests use it to drive the service
/// below or above capacity without knowing the machine.
pub fn capacity_hint(opts: &TargetOptions) -> f64 {
    let concurrency = opts.workers.min(opts.pool_size).max(1) as f64;
    let cost = opts.query_cost.as_secs_f64();
    if cost <= 0.0 {
        f64::INFINITY
    } else {
        concurrency / cost
    }
}

/// Resolves `host:port` and enforces the loopback rule.
fn resolve(opts: &TargetOptions) -> io::Result<SocketAddr> {
    let host = opts.host.trim();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let addrs: Vec<SocketAddr> = (host, opts.port).to_socket_addrs()?.collect();
    let Some(addr) = addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
    else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("host {host:?} resolves to no address"),
        ));
    };
    if !opts.allow_remote && !addrs.iter().all(|a| a.ip().is_loopback()) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refusing to bind {host:?} ({}): not a loopback address; the demo service \
                 accepts remote clients only when allow_remote is set",
                addr.ip()
            ),
        ));
    }
    Ok(addr)
}

/// A bound, ready-to-serve service (data generated, socket listening), for
/// callers that run it on their own tokio runtime: print
/// [`local_addr`](Self::local_addr), then [`serve_until`](Self::serve_until).
pub struct Server {
    listener: http::Server,
    app: Arc<App>,
    cert_pem: Option<String>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.listener.local_addr().ok())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// The address the service listens on (the real port when `port` was 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// With [`TargetOptions::tls`]: the self-signed certificate (PEM), for clients
    /// that trust it instead of skipping verification.
    pub fn cert_pem(&self) -> Option<&str> {
        self.cert_pem.as_deref()
    }

    /// Serves until `shutdown` completes; then stops accepting, drops open
    /// connections and returns. Must run inside a tokio runtime with the
    /// time driver enabled.
    pub async fn serve_until(self, shutdown: impl Future<Output = ()>) -> io::Result<()> {
        app::serve(self.app, self.listener, shutdown).await
    }
}

/// Generates the data and binds the socket (must run inside a tokio runtime;
/// the data generation runs on the blocking pool).
pub async fn bind(opts: TargetOptions) -> io::Result<Server> {
    bind_with(opts, None).await
}

async fn bind_with(opts: TargetOptions, thread_prefix: Option<&'static str>) -> io::Result<Server> {
    opts.validate()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let addr = resolve(&opts)?;
    let (tls, cert_pem) = if opts.tls {
        let (acceptor, pem) =
            http::tls::make_acceptor_alpn(None, vec![b"h2".to_vec(), b"http/1.1".to_vec()])?;
        (Some(acceptor), Some(pem))
    } else {
        (None, None)
    };
    let listener = http::Server::bind(addr).await?;
    let app = tokio::task::spawn_blocking(move || App::new(opts, thread_prefix, tls))
        .await
        .map_err(|e| io::Error::other(format!("data generation failed: {e}")))?;
    Ok(Server {
        listener,
        app: Arc::new(app),
        cert_pem,
    })
}

/// Binds and serves until `shutdown` completes — the CLI's foreground mode
/// on a runtime it already has. Use [`bind`] instead to learn the address
/// before serving.
pub async fn serve_until(
    opts: TargetOptions,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    bind(opts).await?.serve_until(shutdown).await
}

/// Runs the service in the foreground until Ctrl-C (SIGINT), on its own
/// runtime. `on_ready` gets the bound address once the service accepts
/// connections (e.g. to print it). For programs that install their own
/// Ctrl-C handler, [`start`] + [`RunningTarget::shutdown`] avoids a second one.
pub fn run_until_ctrl_c(opts: TargetOptions, on_ready: impl FnOnce(SocketAddr)) -> io::Result<()> {
    let rt = runtime()?;
    let result = rt.block_on(async move {
        let server = bind_with(opts, Some(THREAD_PREFIX)).await?;
        on_ready(server.local_addr()?);
        server
            .serve_until(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Most blocking threads (CPU work, DB waits) the service's runtime may start.
const MAX_BLOCKING_THREADS: usize = 1_024;

/// Name prefix of the service's own threads (runtime and blocking pool),
/// used to report the CPU they use apart from the rest of the process.
const THREAD_PREFIX: &str = "pado-target";

fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // CPU work and DB waits run on blocking threads; the pools bound how
        // many are busy, this bounds how many may exist. Not sized from the
        // configured workers: `POST /admin/faults` may raise them at run time,
        // and blocking threads are only started when used.
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_keep_alive(Duration::from_secs(600))
        .thread_name(THREAD_PREFIX)
        .enable_all()
        .build()
}

/// The service running on its own background thread and runtime (two async
/// worker threads plus blocking threads for CPU work and DB waits), as
/// `pado demo` uses it next to the load generator. Dropping it stops the
/// service too; [`shutdown`](Self::shutdown) says so explicitly.
pub struct RunningTarget {
    addr: SocketAddr,
    app: Arc<App>,
    thread: http::ServerThread,
    cert_pem: Option<String>,
}

impl std::fmt::Debug for RunningTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningTarget")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RunningTarget {
    /// The address the service listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` (`https://` with [`TargetOptions::tls`]; IPv6 in brackets),
    /// with no trailing slash, ready to be a scenario's base URL.
    pub fn base_url(&self) -> String {
        let scheme = if self.cert_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// With [`TargetOptions::tls`]: the self-signed certificate (PEM).
    pub fn cert_pem(&self) -> Option<&str> {
        self.cert_pem.as_deref()
    }

    /// The faults in force now.
    pub fn faults(&self) -> Faults {
        self.app.faults()
    }

    /// Changes the faults while running, like `POST /admin/faults` with a
    /// complete object; refused (unchanged) if [`Faults::validate`] fails.
    pub fn set_faults(&self, faults: Faults) -> Result<(), String> {
        self.app.set_faults(faults)
    }

    /// Requests counted so far in `http_server_requests_seconds_count` (all
    /// label sets): what a load test's request count should equal.
    pub fn requests_served(&self) -> u64 {
        self.app.requests_served()
    }

    /// Stops the service: stops accepting, drops open connections, and
    /// returns once its thread has ended (at most about a second after
    /// in-flight CPU work).
    pub fn shutdown(self) {
        self.thread.shutdown();
    }

    /// Serves until `stop` is set (a signal handler's flag) or, with
    /// `exit_after`, that long has passed, then shuts down (`pado target serve
    /// --exit-after`): a demo target left running by a script ends by itself.
    pub fn serve_until_stopped(self, stop: &AtomicBool, exit_after: Option<Duration>) {
        let deadline = exit_after.map(|d| std::time::Instant::now() + d);
        while !stop.load(Ordering::SeqCst) && deadline.is_none_or(|d| std::time::Instant::now() < d)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.shutdown();
    }
}

/// Starts the service on a background thread with its own multi-thread
/// tokio runtime, and returns once the data is generated and the socket is
/// bound (so the first request succeeds). Errors: invalid options
/// (`InvalidInput`), a non-loopback host without `allow_remote`
/// (`PermissionDenied`), or the bind error.
pub fn start(opts: TargetOptions) -> io::Result<RunningTarget> {
    type Ready = (SocketAddr, Arc<App>, Option<String>);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<Ready>>();
    let thread = http::ServerThread::spawn(THREAD_PREFIX, move |stop| {
        let rt = match runtime() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        rt.block_on(async move {
            let server = match bind_with(opts, Some(THREAD_PREFIX)).await {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let addr = match server.local_addr() {
                Ok(a) => a,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok((addr, server.app.clone(), server.cert_pem.clone())));
            let _ = server.serve_until(stop).await;
        });
        rt.shutdown_timeout(Duration::from_secs(1));
    })?;
    match ready_rx.recv() {
        Ok(Ok((addr, app, cert_pem))) => Ok(RunningTarget {
            addr,
            app,
            thread,
            cert_pem,
        }),
        Ok(Err(e)) => {
            thread.shutdown();
            Err(e)
        }
        Err(_) => {
            thread.shutdown();
            Err(io::Error::other(
                "the demo service thread ended before binding",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_of_no_entries_is_caching_off_and_any_other_size_is_on() {
        let mut o = TargetOptions::default();
        o.set_cache_size(0);
        assert!(!o.faults.cache && o.cache_size == 0);
        o.set_cache_size(3);
        assert!(o.faults.cache && o.cache_size == 3);
    }

    #[test]
    fn a_target_serves_until_its_time_is_up_or_it_is_stopped() {
        let running = start(TargetOptions {
            posts: 10,
            ..Default::default()
        })
        .unwrap();
        let addr = running.addr();
        let stop = AtomicBool::new(false);
        let t = std::time::Instant::now();
        running.serve_until_stopped(&stop, Some(Duration::from_millis(300)));
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(5),
            "{took:?}"
        );
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "still listening"
        );
        // Stopped: it does not wait for a time it was not given.
        let running = start(TargetOptions {
            posts: 10,
            ..Default::default()
        })
        .unwrap();
        let stop = AtomicBool::new(true);
        let t = std::time::Instant::now();
        running.serve_until_stopped(&stop, None);
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn cpu_budget_parsing() {
        assert_eq!(parse_cpu_budget("0.5"), Ok(0.5));
        assert_eq!(parse_cpu_budget(" 2 "), Ok(2.0));
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert_eq!(parse_cpu_budget("50%"), Ok(cpus / 2.0));
        assert!(parse_cpu_budget("0").is_err());
        assert!(parse_cpu_budget("-1").is_err());
        assert!(parse_cpu_budget("abc").is_err());
        assert!(parse_cpu_budget("NaN").is_err());
    }

    #[test]
    fn capacity_hint_uses_smaller_pool() {
        let o = TargetOptions {
            pool_size: 2,
            query_cost: Duration::from_millis(5),
            ..Default::default()
        };
        assert!((capacity_hint(&o) - 400.0).abs() < 1e-6);
        let o = TargetOptions { workers: 1, ..o };
        assert!((capacity_hint(&o) - 200.0).abs() < 1e-6);
        let o = TargetOptions {
            query_cost: Duration::ZERO,
            ..o
        };
        assert!(capacity_hint(&o).is_infinite());
    }

    #[test]
    fn loopback_only_unless_allowed() {
        let o = TargetOptions {
            host: "0.0.0.0".into(),
            ..Default::default()
        };
        assert_eq!(
            resolve(&o).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        let o = TargetOptions {
            allow_remote: true,
            ..o
        };
        assert!(resolve(&o).is_ok());
        for host in ["127.0.0.1", "localhost", "::1", "[::1]"] {
            let o = TargetOptions {
                host: host.into(),
                ..Default::default()
            };
            if let Err(e) = resolve(&o) {
                // ::1 may not resolve on hosts without IPv6; it must not be refused.
                assert_ne!(e.kind(), io::ErrorKind::PermissionDenied, "{host}");
            }
        }
    }

    #[test]
    fn faults_validation() {
        assert!(Faults::default().validate().is_ok());
        let bad = Faults {
            error_rate: 1.5,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let bad = Faults {
            error_rate: f64::NAN,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let bad = TargetOptions {
            workers: 0,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let e = start(bad).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}

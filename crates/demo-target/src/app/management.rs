//! The management endpoints, outside the API's pools and faults so a test can always
//! observe them: `/health`, `/metrics` (Spring-Boot-style Prometheus text) and
//! `/admin/faults`.

use std::sync::atomic::Ordering;

use super::response::Response;
use super::App;
use crate::cache::CacheStats;
use crate::capacity::PoolStats;
use crate::http::Request;
use crate::metrics::{ProcessResources, Text};
use crate::Faults;

/// The `Content-Type` of `/metrics`.
const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether `path` is a management endpoint rather than the API.
pub(super) fn is_management(path: &str) -> bool {
    path == "/health"
        || path == "/metrics"
        || path == "/admin"
        || path.starts_with("/admin/")
        || path == "/actuator/health"
        || path == "/actuator/prometheus"
}

impl App {
    pub(super) fn management(&self, req: &Request) -> Response {
        let get = req.method == "GET" || req.method == "HEAD";
        match req.path.as_str() {
            "/health" | "/actuator/health" => {
                if get {
                    Response::json(200, &serde_json::json!({ "status": "UP" }))
                } else {
                    Response::error(405, "method not allowed")
                        .with_header("allow", "GET, HEAD".into())
                }
            }
            "/metrics" | "/actuator/prometheus" => {
                if get {
                    Response::bytes(200, PROMETHEUS, self.render_metrics().into_bytes())
                } else {
                    Response::error(405, "method not allowed")
                        .with_header("allow", "GET, HEAD".into())
                }
            }
            "/admin/faults" => match req.method.as_str() {
                "GET" | "HEAD" => Response::json(200, &serde_json::json!(self.faults())),
                "POST" | "PUT" => self.post_faults(&req.body),
                _ => Response::error(405, "method not allowed")
                    .with_header("allow", "GET, HEAD, POST, PUT".into()),
            },
            _ => Response::error(404, "no such management endpoint"),
        }
    }

    pub(super) fn post_faults(&self, body: &[u8]) -> Response {
        let patch: serde_json::Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return Response::error(400, &format!("invalid JSON body: {e}")),
        };
        let serde_json::Value::Object(patch) = patch else {
            return Response::error(400, "expected a JSON object");
        };
        let mut merged = match serde_json::to_value(self.faults()) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => return Response::error(500, "cannot encode faults"),
        };
        merged.extend(patch);
        let faults: Faults = match serde_json::from_value(serde_json::Value::Object(merged)) {
            Ok(f) => f,
            Err(e) => return Response::error(400, &format!("invalid faults: {e}")),
        };
        match self.apply_faults(faults) {
            Ok(restart) => {
                let mut resp = Response::json(200, &serde_json::json!(self.faults()));
                resp.restart = restart;
                resp
            }
            Err(e) => Response::error(400, &e),
        }
    }

    /// The whole `/metrics` page, one family group at a time in a fixed order, so a
    /// scrape always reads the same layout.
    pub(super) fn render_metrics(&self) -> String {
        let mut t = Text::default();
        self.render_process(&mut t);
        self.http.render(&mut t);
        self.render_db_pool(&mut t);
        self.render_workers(&mut t);
        self.render_caches(&mut t);
        self.llm.render(&mut t);
        self.render_service(&mut t);
        self.render_faults(&mut t);
        t.out
    }

    /// The process families (CPU, uptime, memory, descriptors) Micrometer exports.
    fn render_process(&self, t: &mut Text) {
        let cpu = self.sampler.usage();
        t.single(
            "process_cpu_usage",
            "Recent CPU usage of the whole process, as a fraction of all available cores",
            "gauge",
            cpu.process,
        );
        if let Some(s) = cpu.system {
            t.single(
                "system_cpu_usage",
                "Recent CPU usage of the whole machine",
                "gauge",
                s,
            );
        }
        t.single(
            "system_cpu_count",
            "Number of cores available to the process",
            "gauge",
            self.sampler.cpus(),
        );
        t.single(
            "process_cpu_seconds_total",
            "CPU time used by the whole process",
            "counter",
            cpu.process_seconds,
        );
        if let Some(own) = cpu.own_threads {
            t.single(
                "pado_target_cpu_usage",
                "Recent CPU usage of the demo service's own threads only (excludes a load \
                 generator running in the same process), as a fraction of all available cores",
                "gauge",
                own,
            );
        }
        let (started, started_unix) = *super::lock(&self.started);
        t.single(
            "process_uptime_seconds",
            "Time since the service started (or last restarted)",
            "gauge",
            started.elapsed().as_secs_f64(),
        );
        t.single(
            "process_start_time_seconds",
            "Start time of the service (or of its last restart), in unix seconds",
            "gauge",
            started_unix,
        );
        let res = ProcessResources::read();
        if let Some(v) = res.resident_bytes {
            t.single(
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                "gauge",
                v as f64,
            );
        }
        if let Some(v) = res.virtual_bytes {
            t.single(
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                "gauge",
                v as f64,
            );
        }
        if let Some(v) = res.open_fds {
            t.single(
                "process_open_fds",
                "Number of open file descriptors",
                "gauge",
                v as f64,
            );
        }
        if let Some(v) = res.max_fds {
            t.single(
                "process_max_fds",
                "Maximum number of open file descriptors",
                "gauge",
                v as f64,
            );
        }
    }

    /// The database pool, named like HikariCP's metrics so dashboards built for Spring
    /// read it unchanged.
    fn render_db_pool(&self, t: &mut Text) {
        let pool = [("pool", "HikariPool-1")];
        let db: PoolStats = self.db.stats();
        t.family("hikaricp_connections_active", "Connections in use", "gauge");
        t.sample("hikaricp_connections_active", &pool, db.active as f64);
        t.family("hikaricp_connections_idle", "Idle connections", "gauge");
        t.sample(
            "hikaricp_connections_idle",
            &pool,
            db.max.saturating_sub(db.active) as f64,
        );
        t.family(
            "hikaricp_connections_pending",
            "Requests waiting for a connection",
            "gauge",
        );
        t.sample("hikaricp_connections_pending", &pool, db.pending as f64);
        t.family("hikaricp_connections", "Connections in the pool", "gauge");
        t.sample("hikaricp_connections", &pool, db.max as f64);
        t.family("hikaricp_connections_max", "Maximum connections", "gauge");
        t.sample("hikaricp_connections_max", &pool, db.max as f64);
        t.family(
            "hikaricp_connections_min",
            "Minimum idle connections",
            "gauge",
        );
        t.sample("hikaricp_connections_min", &pool, db.max as f64);
        t.family(
            "hikaricp_connections_acquire_seconds",
            "Time spent waiting for a connection",
            "summary",
        );
        t.sample(
            "hikaricp_connections_acquire_seconds_count",
            &pool,
            db.acquired as f64,
        );
        t.sample(
            "hikaricp_connections_acquire_seconds_sum",
            &pool,
            db.acquire_seconds,
        );
        t.family(
            "hikaricp_connections_usage_seconds",
            "Time connections were held",
            "summary",
        );
        t.sample(
            "hikaricp_connections_usage_seconds_count",
            &pool,
            db.released as f64,
        );
        t.sample(
            "hikaricp_connections_usage_seconds_sum",
            &pool,
            db.usage_seconds,
        );
        t.family(
            "hikaricp_connections_timeout_total",
            "Connection acquisitions that timed out",
            "counter",
        );
        t.sample(
            "hikaricp_connections_timeout_total",
            &pool,
            db.timeouts as f64,
        );
    }

    /// The worker pool, named like Micrometer's executor metrics.
    fn render_workers(&self, t: &mut Text) {
        let name = [("name", "http")];
        let w = self.workers.stats();
        t.family(
            "executor_active_threads",
            "Workers handling a request",
            "gauge",
        );
        t.sample("executor_active_threads", &name, w.active as f64);
        t.family(
            "executor_queued_tasks",
            "Requests waiting for a worker",
            "gauge",
        );
        t.sample("executor_queued_tasks", &name, w.pending as f64);
        t.family("executor_pool_max_threads", "Worker pool size", "gauge");
        t.sample("executor_pool_max_threads", &name, w.max as f64);
        t.family("executor_pool_size_threads", "Workers in the pool", "gauge");
        t.sample("executor_pool_size_threads", &name, w.max as f64);
        t.family(
            "executor_completed_tasks_total",
            "Requests a worker finished",
            "counter",
        );
        t.sample("executor_completed_tasks_total", &name, w.released as f64);
        t.family(
            "executor_queue_wait_seconds",
            "Time requests waited for a worker",
            "summary",
        );
        t.sample(
            "executor_queue_wait_seconds_count",
            &name,
            w.acquired as f64,
        );
        t.sample("executor_queue_wait_seconds_sum", &name, w.acquire_seconds);
        t.family(
            "executor_rejected_tasks_total",
            "Requests refused because the queue was full",
            "counter",
        );
        t.sample("executor_rejected_tasks_total", &name, w.rejected as f64);
    }

    /// The two caches, named like Micrometer's cache metrics.
    fn render_caches(&self, t: &mut Text) {
        let caches: [(&str, CacheStats); 2] = [
            ("posts", self.details.stats()),
            ("search", self.searches.stats()),
        ];
        t.family("cache_gets_total", "Cache lookups by result", "counter");
        for (cache, s) in &caches {
            t.sample(
                "cache_gets_total",
                &[("cache", cache), ("result", "hit")],
                s.hits as f64,
            );
            t.sample(
                "cache_gets_total",
                &[("cache", cache), ("result", "miss")],
                s.misses as f64,
            );
        }
        t.family("cache_puts_total", "Entries added to the cache", "counter");
        for (cache, s) in &caches {
            t.sample("cache_puts_total", &[("cache", cache)], s.puts as f64);
        }
        t.family(
            "cache_evictions_total",
            "Entries evicted to make room",
            "counter",
        );
        for (cache, s) in &caches {
            t.sample(
                "cache_evictions_total",
                &[("cache", cache)],
                s.evictions as f64,
            );
        }
        t.family("cache_size", "Entries in the cache", "gauge");
        for (cache, s) in &caches {
            t.sample("cache_size", &[("cache", cache)], s.size as f64);
        }
        t.family("cache_max_size", "Capacity of the cache", "gauge");
        for (cache, s) in &caches {
            t.sample("cache_max_size", &[("cache", cache)], s.capacity as f64);
        }
    }

    /// The demo service's own counters (`pado_target_*`): work done, connections and
    /// what the leak faults hold.
    fn render_service(&self, t: &mut Text) {
        let posts = pado_base::lock::read(&self.store).posts.len();
        t.single(
            "pado_target_posts",
            "Posts in the store",
            "gauge",
            posts as f64,
        );
        t.single(
            "pado_target_search_postings_total",
            "Postings walked by searches that missed the cache",
            "counter",
            self.postings_walked.load(Ordering::Relaxed) as f64,
        );
        t.single(
            "pado_target_searches_total",
            "Searches scored (cache misses)",
            "counter",
            self.searches_run.load(Ordering::Relaxed) as f64,
        );
        t.single(
            "pado_target_cpu_work_seconds_total",
            "Synthetic CPU time burned by search and autocomplete",
            "counter",
            self.cpu.burned_seconds(),
        );
        t.single(
            "pado_target_connections",
            "Open client connections",
            "gauge",
            self.connections.load(Ordering::Relaxed) as f64,
        );
        t.single(
            "pado_target_connections_total",
            "Client connections accepted",
            "counter",
            self.connections_total.load(Ordering::Relaxed) as f64,
        );
        t.single(
            "pado_target_leaked_bytes",
            "Memory the leak fault holds (leak_kib_per_request), freed by a restart",
            "gauge",
            self.leak.bytes() as f64,
        );
        t.single(
            "pado_target_pool_leaked_connections",
            "DB connections the pool-leak fault took and never gave back (counted as active)",
            "gauge",
            self.db.leaked() as f64,
        );
        t.single(
            "pado_target_restarts_total",
            "Restarts (restart_ms) the service went through",
            "counter",
            self.restarts.load(Ordering::Relaxed) as f64,
        );
    }

    /// The faults in force, one sample each, so a run's observe data shows when they
    /// changed.
    fn render_faults(&self, t: &mut Text) {
        let f = self.faults();
        t.family(
            "pado_target_fault",
            "Faults in force (see /admin/faults)",
            "gauge",
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "added_latency_ms")],
            f.added_latency_ms as f64,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "error_rate")],
            f.error_rate,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "stall_ms")],
            f.stall_ms as f64,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "stall_every_s")],
            f.stall_every_s,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "cache_disabled")],
            if f.cache { 0.0 } else { 1.0 },
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "pool_size")],
            f.pool_size as f64,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "workers")],
            f.workers as f64,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "restart_ms")],
            f.restart_ms as f64,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "leak_kib_per_request")],
            f.leak_kib_per_request as f64,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "leak_creep_us_per_mib")],
            f.leak_creep_us_per_mib as f64,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "pool_leak_every_s")],
            f.pool_leak_every_s,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "llm_batch_limit")],
            f.llm_batch_limit as f64,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "llm_prefill_ms_per_1k_tokens")],
            f.llm_prefill_ms_per_1k_tokens,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "llm_decode_ms_per_token")],
            f.llm_decode_ms_per_token,
        );
        t.sample(
            "pado_target_fault",
            &[("fault", "llm_batch_slowdown")],
            f.llm_batch_slowdown,
        );
    }
}

//! The service itself: state, connection loop, routing and handlers.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::cache::{Cache, CacheStats};
use crate::capacity::{db_query, AcquireError, Cpu, Pool, PoolStats};
use crate::data::{self, Store};
use crate::http::{
    connection_value, read_request, reason, write_response, Head, ReadError, Request, Server,
};
use crate::index::{tokenize, Index, MAX_QUERY_TERMS};
use crate::metrics::{CpuSampler, HttpMetrics, SeriesKey, Text};
use crate::{Faults, TargetOptions};

/// A connection idle this long between requests is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Most tokens remembered; the oldest are forgotten first.
const MAX_TOKENS: usize = 100_000;
/// Results per search / autocomplete.
const TOP: usize = 10;
/// Largest page size of `GET /api/posts`.
const MAX_PAGE_SIZE: usize = 100;
/// Longest title / body accepted by `POST /api/posts`, in characters.
const MAX_TITLE: usize = 300;
const MAX_BODY_CHARS: usize = 100_000;
/// The largest request body the service reads (`413` above): bodies are JSON
/// documents of a few hundred bytes, and memory must stay bounded whatever a client
/// sends.
const MAX_REQUEST_BODY: u64 = 1024 * 1024;

const JSON: &str = "application/json";
const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A response about to be written.
#[derive(Debug)]
pub(crate) struct Response {
    status: u16,
    content_type: &'static str,
    body: Arc<[u8]>,
    headers: Vec<(&'static str, String)>,
}

impl Response {
    fn json(status: u16, value: &serde_json::Value) -> Response {
        Response::bytes(status, JSON, serde_json::to_vec(value).unwrap_or_default())
    }

    fn bytes(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    fn cached(body: Arc<[u8]>) -> Response {
        Response {
            status: 200,
            content_type: JSON,
            body,
            headers: Vec::new(),
        }
    }

    fn error(status: u16, message: &str) -> Response {
        Response::json(
            status,
            &serde_json::json!({ "status": status, "error": reason(status), "message": message }),
        )
    }

    fn empty(status: u16) -> Response {
        Response {
            status,
            content_type: JSON,
            body: Arc::from(Vec::new()),
            headers: Vec::new(),
        }
    }

    fn with_header(mut self, name: &'static str, value: String) -> Response {
        self.headers.push((name, value));
        self
    }
}

/// Users' tokens, bounded (oldest forgotten first).
#[derive(Debug, Default)]
struct Tokens {
    users: HashMap<String, String>,
    order: VecDeque<String>,
}

/// Everything the handlers share.
pub(crate) struct App {
    opts: TargetOptions,
    store: RwLock<Store>,
    index: Arc<RwLock<Index>>,
    tokens: Mutex<Tokens>,
    workers: Pool,
    db: Pool,
    cpu: Cpu,
    details: Cache<u64, Arc<[u8]>>,
    searches: Cache<String, Arc<[u8]>>,
    faults: Mutex<Faults>,
    faults_changed: Notify,
    stalled_until: Mutex<Option<Instant>>,
    http: HttpMetrics,
    sampler: CpuSampler,
    started: Instant,
    started_unix: f64,
    connections: AtomicUsize,
    connections_total: AtomicU64,
    searches_run: AtomicU64,
    postings_walked: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// What a request path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Login,
    Search,
    Autocomplete,
    ListPosts,
    CreatePost,
    GetPost(Option<u64>),
    DeletePost(Option<u64>),
    LikePost(Option<u64>),
    MethodNotAllowed(&'static str),
    NotFound,
}

/// Method label with bounded cardinality.
fn method_label(method: &str) -> &'static str {
    match method {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "PATCH" => "PATCH",
        "OPTIONS" => "OPTIONS",
        _ => "OTHER",
    }
}

/// Maps method and path to a route and its `uri` label (the template).
fn route(method: &str, path: &str) -> (&'static str, Route) {
    let path = if path.len() > 1 {
        path.strip_suffix('/').unwrap_or(path)
    } else {
        path
    };
    let get = method == "GET" || method == "HEAD";
    let post = method == "POST";
    let fixed = |uri: &'static str, ok: bool, r: Route, allow: &'static str| {
        if ok {
            (uri, r)
        } else {
            (uri, Route::MethodNotAllowed(allow))
        }
    };
    match path {
        "/api/login" => fixed("/api/login", post, Route::Login, "POST"),
        "/api/search" => fixed("/api/search", get, Route::Search, "GET, HEAD"),
        "/api/autocomplete" => fixed("/api/autocomplete", get, Route::Autocomplete, "GET, HEAD"),
        "/api/posts" => match method {
            "GET" | "HEAD" => ("/api/posts", Route::ListPosts),
            "POST" => ("/api/posts", Route::CreatePost),
            _ => ("/api/posts", Route::MethodNotAllowed("GET, HEAD, POST")),
        },
        _ => {
            let Some(rest) = path.strip_prefix("/api/posts/") else {
                return ("NOT_FOUND", Route::NotFound);
            };
            let (id, like) = match rest.split_once('/') {
                Some((id, "like")) => (id, true),
                Some(_) => return ("NOT_FOUND", Route::NotFound),
                None => (rest, false),
            };
            // Only plain decimal ids; anything else is a 404 from the handler.
            let id = if !id.is_empty() && id.len() <= 19 && id.bytes().all(|b| b.is_ascii_digit()) {
                id.parse::<u64>().ok()
            } else {
                None
            };
            if like {
                fixed("/api/posts/{id}/like", post, Route::LikePost(id), "POST")
            } else {
                match method {
                    "GET" | "HEAD" => ("/api/posts/{id}", Route::GetPost(id)),
                    "DELETE" => ("/api/posts/{id}", Route::DeletePost(id)),
                    _ => (
                        "/api/posts/{id}",
                        Route::MethodNotAllowed("GET, HEAD, DELETE"),
                    ),
                }
            }
        }
    }
}

fn is_management(path: &str) -> bool {
    path == "/health"
        || path == "/metrics"
        || path == "/admin"
        || path.starts_with("/admin/")
        || path == "/actuator/health"
        || path == "/actuator/prometheus"
}

#[derive(Deserialize)]
struct LoginBody {
    /// Any non-empty user logs in; the password is accepted as sent.
    user: String,
}

#[derive(Deserialize)]
struct CreateBody {
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    tags: Vec<String>,
}

fn parse_json<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Response> {
    serde_json::from_slice(body)
        .map_err(|e| Response::error(400, &format!("invalid JSON body: {e}")))
}

impl App {
    pub fn new(opts: TargetOptions, thread_prefix: Option<&'static str>) -> App {
        let generated = data::generate(opts.posts, opts.seed);
        let index = Index::from_generated(&generated);
        let store = generated.store;
        let cache_size = opts.cache_size;
        App {
            workers: Pool::new(opts.workers),
            db: Pool::new(opts.pool_size),
            cpu: Cpu::new(opts.cpu_budget),
            details: Cache::new(cache_size, None),
            searches: Cache::new(cache_size, Some(opts.search_cache_ttl)),
            faults: Mutex::new(opts.faults.clone()),
            faults_changed: Notify::new(),
            stalled_until: Mutex::new(None),
            store: RwLock::new(store),
            index: Arc::new(RwLock::new(index)),
            tokens: Mutex::new(Tokens::default()),
            http: HttpMetrics::default(),
            sampler: CpuSampler::new(thread_prefix),
            started: Instant::now(),
            started_unix: unix_now(),
            connections: AtomicUsize::new(0),
            connections_total: AtomicU64::new(0),
            searches_run: AtomicU64::new(0),
            postings_walked: AtomicU64::new(0),
            opts,
        }
    }

    pub fn faults(&self) -> Faults {
        lock(&self.faults).clone()
    }

    pub fn set_faults(&self, faults: Faults) -> Result<(), String> {
        faults.validate()?;
        let once = faults.stall_ms > 0 && faults.stall_every_s == 0.0;
        let stall = Duration::from_millis(faults.stall_ms);
        *lock(&self.faults) = faults;
        if once {
            self.stall_now(stall);
        }
        self.faults_changed.notify_one();
        Ok(())
    }

    pub fn requests_served(&self) -> u64 {
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

    // ---------------------------------------------------------------- dispatch

    async fn handle(self: &Arc<Self>, req: &Request) -> Response {
        if is_management(&req.path) {
            return self.management(req);
        }
        let t0 = Instant::now();
        let (uri, route) = route(&req.method, &req.path);
        self.wait_stall().await;
        let faults = self.faults();
        let resp = if faults.error_rate > 0.0 && fastrand::f64() < faults.error_rate {
            Response::error(500, "injected fault (error_rate)")
        } else {
            self.with_worker(req, route).await
        };
        if faults.added_latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(faults.added_latency_ms)).await;
        }
        self.wait_stall().await;
        self.http.record(
            SeriesKey {
                method: method_label(&req.method),
                uri,
                status: resp.status,
            },
            t0.elapsed(),
        );
        resp
    }

    async fn with_worker(self: &Arc<Self>, req: &Request, route: Route) -> Response {
        let (_worker, waited) = match self.workers.acquire(None, self.opts.max_queue).await {
            Ok(p) => p,
            Err(AcquireError::QueueFull) => {
                return Response::error(503, "request queue is full")
                    .with_header("retry-after", "1".into())
            }
            Err(_) => return Response::error(503, "shutting down"),
        };
        let resp = self.api(req, route).await;
        resp.with_header(
            "server-timing",
            format!("queue;dur={:.3}", waited.as_secs_f64() * 1e3),
        )
    }

    async fn api(self: &Arc<Self>, req: &Request, route: Route) -> Response {
        match route {
            Route::Login => self.login(req).await,
            Route::Search => self.search(req).await,
            Route::Autocomplete => self.autocomplete(req).await,
            Route::ListPosts => self.list(req).await,
            Route::CreatePost => self.create(req).await,
            Route::GetPost(id) => self.detail(id).await,
            Route::LikePost(id) => self.like(req, id).await,
            Route::DeletePost(id) => self.delete(req, id).await,
            Route::MethodNotAllowed(allow) => {
                Response::error(405, "method not allowed").with_header("allow", allow.to_string())
            }
            Route::NotFound => Response::error(404, "no such route"),
        }
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

    fn user_of(&self, req: &Request) -> Result<String, Response> {
        let token = req
            .header("authorization")
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|t| !t.is_empty());
        let Some(token) = token else {
            return Err(Response::error(401, "missing bearer token")
                .with_header("www-authenticate", "Bearer".into()));
        };
        lock(&self.tokens).users.get(token).cloned().ok_or_else(|| {
            Response::error(401, "unknown token").with_header("www-authenticate", "Bearer".into())
        })
    }

    // ---------------------------------------------------------------- handlers

    async fn login(&self, req: &Request) -> Response {
        let body: LoginBody = match parse_json(&req.body) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let user = body.user.trim().to_string();
        if user.is_empty() {
            return Response::error(401, "user must not be empty");
        }
        if let Err(r) = self.query(|| ()).await {
            return r;
        }
        let mut rng = fastrand::Rng::new();
        let token = format!("{:016x}{:016x}", rng.u64(..), rng.u64(..));
        {
            let mut t = lock(&self.tokens);
            if t.order.len() >= MAX_TOKENS {
                if let Some(old) = t.order.pop_front() {
                    t.users.remove(&old);
                }
            }
            t.users.insert(token.clone(), user.clone());
            t.order.push_back(token.clone());
        }
        Response::json(200, &serde_json::json!({ "token": token, "user": user }))
    }

    async fn search(self: &Arc<Self>, req: &Request) -> Response {
        let Some(q) = req.query_param("q") else {
            return Response::error(400, "missing query parameter q");
        };
        let mut terms = tokenize(q);
        terms.sort_unstable();
        terms.dedup();
        terms.truncate(MAX_QUERY_TERMS);
        let key = terms.join(" ");
        let cache = self.cache_enabled();
        if let Some(body) = self.searches.get(&key, cache) {
            return Response::cached(body);
        }
        let index = self.index.clone();
        let posting_cost = self.opts.posting_cost;
        let query = key.clone();
        let Some(result) = self
            .cpu
            .run(move || {
                let r = index
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .search(&query, TOP);
                let cost = posting_cost.saturating_mul(r.postings.min(u32::MAX as usize) as u32);
                (r, cost)
            })
            .await
        else {
            return Response::error(503, "shutting down");
        };
        self.searches_run.fetch_add(1, Ordering::Relaxed);
        self.postings_walked
            .fetch_add(result.postings as u64, Ordering::Relaxed);
        let results: Vec<serde_json::Value> = result
            .hits
            .iter()
            .map(|h| {
                serde_json::json!({
                    "id": h.id,
                    "title": &*h.title,
                    "score": (f64::from(h.score) * 1e4).round() / 1e4,
                })
            })
            .collect();
        let body: Arc<[u8]> = serde_json::to_vec(&serde_json::json!({
            "query": q,
            "terms": terms,
            "total": result.total,
            "postings": result.postings,
            "results": results,
        }))
        .unwrap_or_default()
        .into();
        self.searches.put(key, body.clone(), cache);
        Response::cached(body)
    }

    async fn autocomplete(self: &Arc<Self>, req: &Request) -> Response {
        let Some(prefix) = req.query_param("prefix") else {
            return Response::error(400, "missing query parameter prefix");
        };
        let prefix: String = prefix.chars().take(64).collect();
        let index = self.index.clone();
        let posting_cost = self.opts.posting_cost;
        let p = prefix.clone();
        let Some(s) = self
            .cpu
            .run(move || {
                let s = index
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .autocomplete(&p, TOP);
                let cost = posting_cost.saturating_mul(s.scanned.min(u32::MAX as usize) as u32);
                (s, cost)
            })
            .await
        else {
            return Response::error(503, "shutting down");
        };
        let titles: Vec<serde_json::Value> = s
            .titles
            .iter()
            .map(|(id, t)| serde_json::json!({ "id": id, "title": &**t }))
            .collect();
        Response::json(
            200,
            &serde_json::json!({ "prefix": prefix, "suggestions": s.terms, "titles": titles }),
        )
    }

    async fn list(&self, req: &Request) -> Response {
        let parse = |name: &str, default: usize| -> Result<usize, Response> {
            match req.query_param(name) {
                None | Some("") => Ok(default),
                Some(v) => v.trim().parse::<usize>().map_err(|_| {
                    Response::error(400, &format!("{name} must be a non-negative integer"))
                }),
            }
        };
        let page = match parse("page", 0) {
            Ok(p) => p,
            Err(r) => return r,
        };
        let size = match parse("size", 20) {
            Ok(s) => s.clamp(1, MAX_PAGE_SIZE),
            Err(r) => return r,
        };
        let listed = self.query(|| {
            let store = self.store.read().unwrap_or_else(|e| e.into_inner());
            let items: Vec<serde_json::Value> = store
                .posts
                .values()
                .rev()
                .skip(page.saturating_mul(size))
                .take(size)
                .map(|p| p.summary_json())
                .collect();
            (store.posts.len(), items)
        });
        match listed.await {
            Ok((total, items)) => Response::json(
                200,
                &serde_json::json!({ "page": page, "size": size, "total": total, "items": items }),
            ),
            Err(r) => r,
        }
    }

    async fn detail(&self, id: Option<u64>) -> Response {
        let Some(id) = id else {
            return Response::error(404, "no such post");
        };
        let cache = self.cache_enabled();
        if let Some(body) = self.details.get(&id, cache) {
            return Response::cached(body);
        }
        let found = self.query(|| {
            let store = self.store.read().unwrap_or_else(|e| e.into_inner());
            store.posts.get(&id).map(|p| p.detail_json())
        });
        match found.await {
            Ok(Some(json)) => {
                let body: Arc<[u8]> = serde_json::to_vec(&json).unwrap_or_default().into();
                self.details.put(id, body.clone(), cache);
                Response::cached(body)
            }
            Ok(None) => Response::error(404, "no such post"),
            Err(r) => r,
        }
    }

    async fn create(&self, req: &Request) -> Response {
        let user = match self.user_of(req) {
            Ok(u) => u,
            Err(r) => return r,
        };
        let body: CreateBody = match parse_json(&req.body) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let title = body.title.trim().to_string();
        if title.is_empty() || title.chars().count() > MAX_TITLE {
            return Response::error(400, &format!("title must have 1 to {MAX_TITLE} characters"));
        }
        if body.body.chars().count() > MAX_BODY_CHARS {
            return Response::error(
                400,
                &format!("body must have at most {MAX_BODY_CHARS} characters"),
            );
        }
        let tags: Vec<String> = body
            .tags
            .into_iter()
            .map(|t| t.trim().chars().take(40).collect::<String>())
            .filter(|t| !t.is_empty())
            .take(5)
            .collect();
        let created = self.query(|| {
            let mut store = self.store.write().unwrap_or_else(|e| e.into_inner());
            let now = unix_now() as i64;
            let post = store.create(title, body.body, user, tags, now);
            self.index
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .add(&post);
            post.id
        });
        match created.await {
            Ok(id) => Response::json(201, &serde_json::json!({ "id": id }))
                .with_header("location", format!("/api/posts/{id}")),
            Err(r) => r,
        }
    }

    async fn like(&self, req: &Request, id: Option<u64>) -> Response {
        if let Err(r) = self.user_of(req) {
            return r;
        }
        let Some(id) = id else {
            return Response::error(404, "no such post");
        };
        let liked = self.query(|| {
            let store = self.store.read().unwrap_or_else(|e| e.into_inner());
            store
                .posts
                .get(&id)
                .map(|p| p.likes.fetch_add(1, Ordering::Relaxed) + 1)
        });
        match liked.await {
            Ok(Some(likes)) => {
                self.details.invalidate(&id);
                Response::json(200, &serde_json::json!({ "id": id, "likes": likes }))
            }
            Ok(None) => Response::error(404, "no such post"),
            Err(r) => r,
        }
    }

    async fn delete(&self, req: &Request, id: Option<u64>) -> Response {
        if let Err(r) = self.user_of(req) {
            return r;
        }
        let Some(id) = id else {
            return Response::error(404, "no such post");
        };
        let removed = self.query(|| {
            let removed = self
                .store
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .posts
                .remove(&id)
                .is_some();
            if removed {
                self.index
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(id);
            }
            removed
        });
        match removed.await {
            Ok(true) => {
                self.details.invalidate(&id);
                Response::empty(204)
            }
            Ok(false) => Response::error(404, "no such post"),
            Err(r) => r,
        }
    }

    // ---------------------------------------------------------------- management

    fn management(&self, req: &Request) -> Response {
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

    fn post_faults(&self, body: &[u8]) -> Response {
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
        match self.set_faults(faults) {
            Ok(()) => Response::json(200, &serde_json::json!(self.faults())),
            Err(e) => Response::error(400, &e),
        }
    }

    fn render_metrics(&self) -> String {
        let mut t = Text::default();
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
        t.single(
            "process_uptime_seconds",
            "Time since the service started",
            "gauge",
            self.started.elapsed().as_secs_f64(),
        );
        t.single(
            "process_start_time_seconds",
            "Start time of the service, in unix seconds",
            "gauge",
            self.started_unix,
        );
        self.http.render(&mut t);

        let pool = [("pool", "HikariPool-1")];
        let db: PoolStats = self.db.stats();
        t.family("hikaricp_connections_active", "Connections in use", "gauge");
        t.sample("hikaricp_connections_active", &pool, db.active as f64);
        t.family("hikaricp_connections_idle", "Idle connections", "gauge");
        t.sample(
            "hikaricp_connections_idle",
            &pool,
            (db.max - db.active) as f64,
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

        let posts = self
            .store
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .posts
            .len();
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
        t.out
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

// -------------------------------------------------------------------- serving

/// Serves until `shutdown`, with the fault ticker and CPU sampler beside the
/// connections; then closes the pools (waking queued requests), drops every
/// connection and stops the background tasks.
pub(crate) async fn serve(
    app: Arc<App>,
    server: Server,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let mut background: JoinSet<()> = JoinSet::new();
    background.spawn(stall_ticker(app.clone()));
    background.spawn(cpu_sampler(app.clone()));
    let one_shot = {
        let f = app.faults();
        f.stall_ms > 0 && f.stall_every_s == 0.0
    };
    if one_shot {
        app.stall_now(Duration::from_millis(app.faults().stall_ms));
    }
    let pools = app.clone();
    let shutdown = async move {
        shutdown.await;
        pools.workers.close();
        pools.db.close();
    };
    server
        .serve(shutdown, |stream, _| {
            let app = app.clone();
            async move {
                app.connections.fetch_add(1, Ordering::Relaxed);
                app.connections_total.fetch_add(1, Ordering::Relaxed);
                serve_connection(&app, stream).await;
                app.connections.fetch_sub(1, Ordering::Relaxed);
            }
        })
        .await;
    background.shutdown().await;
    Ok(())
}

async fn stall_ticker(app: Arc<App>) {
    loop {
        let f = app.faults();
        if f.stall_ms > 0 && f.stall_every_s > 0.0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(f.stall_every_s)) => {
                    app.stall_now(Duration::from_millis(f.stall_ms));
                }
                _ = app.faults_changed.notified() => {}
            }
        } else {
            app.faults_changed.notified().await;
        }
    }
}

async fn cpu_sampler(app: Arc<App>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        app.sampler.sample();
    }
}

async fn serve_connection(app: &Arc<App>, mut stream: TcpStream) {
    let mut buf: Vec<u8> = Vec::with_capacity(8 * 1024);
    loop {
        let req = match tokio::time::timeout(
            IDLE_TIMEOUT,
            read_request(&mut stream, &mut buf, MAX_REQUEST_BODY),
        )
        .await
        {
            Err(_) | Ok(Ok(None)) | Ok(Err(ReadError::Io)) => return,
            Ok(Err(ReadError::Malformed(status, message))) => {
                let resp = Response::error(status, message);
                let _ = send(&mut stream, &resp, false, 1, false).await;
                return;
            }
            Ok(Ok(Some(req))) => req,
        };
        let resp = app.handle(&req).await;
        let keep = req.keep_alive;
        if send(&mut stream, &resp, keep, req.version, req.is_head())
            .await
            .is_err()
            || !keep
        {
            return;
        }
    }
}

/// Writes `resp` with a `Content-Length` body (none for 204, whose head has neither
/// type nor length), keeping the connection or saying it closes.
async fn send(
    stream: &mut TcpStream,
    resp: &Response,
    keep_alive: bool,
    version: u8,
    head_only: bool,
) -> io::Result<()> {
    let mut head = Head::lowercase(resp.status);
    let body: &[u8] = if resp.status == 204 {
        &[]
    } else {
        head.header("content-type", resp.content_type)
            .content_length(resp.body.len() as u64);
        &resp.body
    };
    for (name, value) in &resp.headers {
        head.header(name, value);
    }
    head.connection(connection_value(keep_alive, version));
    write_response(stream, head, body, head_only).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_templates() {
        assert_eq!(route("POST", "/api/login"), ("/api/login", Route::Login));
        assert_eq!(
            route("GET", "/api/posts/"),
            ("/api/posts", Route::ListPosts)
        );
        assert_eq!(
            route("GET", "/api/posts/12"),
            ("/api/posts/{id}", Route::GetPost(Some(12)))
        );
        assert_eq!(
            route("GET", "/api/posts/abc"),
            ("/api/posts/{id}", Route::GetPost(None))
        );
        assert_eq!(
            route("GET", "/api/posts/99999999999999999999999"),
            ("/api/posts/{id}", Route::GetPost(None))
        );
        assert_eq!(
            route("POST", "/api/posts/7/like"),
            ("/api/posts/{id}/like", Route::LikePost(Some(7)))
        );
        assert_eq!(
            route("GET", "/api/posts/7/like"),
            ("/api/posts/{id}/like", Route::MethodNotAllowed("POST"))
        );
        assert_eq!(
            route("DELETE", "/api/posts/7"),
            ("/api/posts/{id}", Route::DeletePost(Some(7)))
        );
        assert_eq!(
            route("GET", "/api/posts/7/x"),
            ("NOT_FOUND", Route::NotFound)
        );
        assert_eq!(route("GET", "/nope"), ("NOT_FOUND", Route::NotFound));
        assert_eq!(route("GET", "/"), ("NOT_FOUND", Route::NotFound));
        assert_eq!(method_label("BREW"), "OTHER");
    }
}

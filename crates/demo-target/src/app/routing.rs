//! Routing: which route a method and path are (with the `uri` label the metrics
//! use), and the dispatch every request goes through: management endpoints apart,
//! then injected faults, a worker from the pool, the handler, and the request's
//! timing in `http_server_requests_seconds`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::management::is_management;
use super::response::Response;
use super::App;
use crate::capacity::AcquireError;
use crate::http::Request;
use crate::metrics::SeriesKey;

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
pub(super) fn method_label(method: &str) -> &'static str {
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

impl App {
    pub(super) async fn handle(self: &Arc<Self>, req: &Request) -> Response {
        if is_management(&req.path) {
            return self.management(req);
        }
        let t0 = Instant::now();
        let (uri, route) = route(&req.method, &req.path);
        self.wait_stall().await;
        let faults = self.faults();
        self.leak.retain(faults.leak_kib_per_request);
        let resp = if faults.error_rate > 0.0 && fastrand::f64() < faults.error_rate {
            Response::error(500, "injected fault (error_rate)")
        } else {
            self.with_worker(req, route).await
        };
        let delay = Duration::from_millis(faults.added_latency_ms) + self.leak_creep(&faults);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
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

    /// The wait `leak_creep_us_per_mib` adds for the memory the leak holds now
    /// (at most a minute).
    fn leak_creep(&self, faults: &crate::Faults) -> Duration {
        if faults.leak_creep_us_per_mib == 0 {
            return Duration::ZERO;
        }
        let mib = self.leak.bytes() as f64 / (1024.0 * 1024.0);
        Duration::from_secs_f64((mib * faults.leak_creep_us_per_mib as f64 / 1e6).min(60.0))
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

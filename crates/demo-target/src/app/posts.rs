//! `/api/posts`: listing, reading (behind the detail cache), creating, liking and
//! deleting posts, each a query on a pooled DB connection.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde::Deserialize;

use super::response::{parse_json, Response};
use super::{unix_now, App};
use crate::http::Request;

/// Largest page size of `GET /api/posts`.
const MAX_PAGE_SIZE: usize = 100;
/// Longest title / body accepted by `POST /api/posts`, in characters.
const MAX_TITLE: usize = 300;
const MAX_BODY_CHARS: usize = 100_000;

#[derive(Deserialize)]
struct CreateBody {
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    tags: Vec<String>,
}

impl App {
    pub(super) async fn list(&self, req: &Request) -> Response {
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
            let store = pado_base::lock::read(&self.store);
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

    pub(super) async fn detail(&self, id: Option<u64>) -> Response {
        let Some(id) = id else {
            return Response::error(404, "no such post");
        };
        let cache = self.cache_enabled();
        if let Some(body) = self.details.get(&id, cache) {
            return Response::cached(body);
        }
        let found = self.query(|| {
            let store = pado_base::lock::read(&self.store);
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

    pub(super) async fn create(&self, req: &Request) -> Response {
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
            let mut store = pado_base::lock::write(&self.store);
            let now = unix_now() as i64;
            let post = store.create(title, body.body, user, tags, now);
            pado_base::lock::write(&self.index).add(&post);
            post.id
        });
        match created.await {
            Ok(id) => Response::json(201, &serde_json::json!({ "id": id }))
                .with_header("location", format!("/api/posts/{id}")),
            Err(r) => r,
        }
    }

    pub(super) async fn like(&self, req: &Request, id: Option<u64>) -> Response {
        if let Err(r) = self.user_of(req) {
            return r;
        }
        let Some(id) = id else {
            return Response::error(404, "no such post");
        };
        let liked = self.query(|| {
            let store = pado_base::lock::read(&self.store);
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

    pub(super) async fn delete(&self, req: &Request, id: Option<u64>) -> Response {
        if let Err(r) = self.user_of(req) {
            return r;
        }
        let Some(id) = id else {
            return Response::error(404, "no such post");
        };
        let removed = self.query(|| {
            let removed = pado_base::lock::write(&self.store)
                .posts
                .remove(&id)
                .is_some();
            if removed {
                pado_base::lock::write(&self.index).remove(id);
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
}

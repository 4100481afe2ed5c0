//! The gRPC service (`proto/board.proto`, package `pado.board`), served over
//! HTTP/2 on the service's port beside the JSON API, with server reflection (v1 and
//! v1alpha) so a client such as pado or grpcurl can call it by name without the
//! `.proto` file:
//!
//! - `pado.board.Board/GetPost` `{id}` → the post, or `NOT_FOUND`;
//! - `pado.board.Board/ListPosts` `{page, size}` → a server stream of a page of
//!   posts, newest first.
//!
//! Each call goes through the same route as its JSON twin (`GET /api/posts/{id}`,
//! `GET /api/posts`): the same worker pool, database pool, cache, faults and
//! `http_server_requests_seconds` series, so a gRPC load test meets the same
//! capacity as an HTTP one. An answer the route fails (`500`, `503`) is the gRPC
//! code a real service would send (`INTERNAL`, `UNAVAILABLE`).

use std::pin::Pin;
use std::sync::Arc;

use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::App;

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod pb {
    tonic::include_proto!("pado.board");
}

/// The encoded descriptor set of `board.proto` (what reflection serves).
const DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/board_descriptor.bin"));

struct Board {
    app: Arc<App>,
}

type PostStream = Pin<Box<dyn Stream<Item = Result<pb::Post, Status>> + Send>>;

/// The gRPC status of a JSON route's failed answer.
fn status_of(status: u16, body: &[u8]) -> Status {
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_default();
    match status {
        404 => Status::not_found(message),
        400 => Status::invalid_argument(message),
        503 => Status::unavailable(message),
        _ => Status::internal(message),
    }
}

/// A post's JSON (detail or summary) as the message.
fn post_of(v: &serde_json::Value) -> pb::Post {
    let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    pb::Post {
        id: v["id"].as_u64().unwrap_or_default(),
        title: text("title"),
        body: text("body"),
        author: text("author"),
        tags: v["tags"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        likes: v["likes"].as_u64().unwrap_or_default(),
        created_at: text("created_at"),
    }
}

impl Board {
    /// Runs `GET target` through the service's own dispatch: JSON on success, the
    /// gRPC status of its failure otherwise.
    async fn route(&self, target: &str) -> Result<serde_json::Value, Status> {
        let req = super::h2::internal_get(target);
        let resp = self.app.handle(&req).await;
        if resp.status != 200 {
            return Err(status_of(resp.status, &resp.body));
        }
        serde_json::from_slice(&resp.body).map_err(|e| Status::internal(e.to_string()))
    }
}

#[tonic::async_trait]
impl pb::board_server::Board for Board {
    async fn get_post(
        &self,
        request: Request<pb::GetPostRequest>,
    ) -> Result<Response<pb::Post>, Status> {
        let id = request.into_inner().id;
        let v = self.route(&format!("/api/posts/{id}")).await?;
        Ok(Response::new(post_of(&v)))
    }

    type ListPostsStream = PostStream;

    async fn list_posts(
        &self,
        request: Request<pb::ListPostsRequest>,
    ) -> Result<Response<PostStream>, Status> {
        let r = request.into_inner();
        let size = if r.size == 0 { 20 } else { r.size };
        let v = self
            .route(&format!("/api/posts?page={}&size={size}", r.page))
            .await?;
        let posts: Vec<Result<pb::Post, Status>> = v["items"]
            .as_array()
            .map(|items| items.iter().map(|i| Ok(post_of(i))).collect())
            .unwrap_or_default();
        Ok(Response::new(
            Box::pin(tokio_stream::iter(posts)) as PostStream
        ))
    }
}

/// The gRPC routes of one connection: the board and both reflection services.
pub(super) fn routes(app: Arc<App>) -> tonic::service::Routes {
    let mut routes = tonic::service::Routes::new(pb::board_server::BoardServer::new(Board { app }));
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(DESCRIPTOR)
    };
    if let Ok(v1) = reflection().build_v1() {
        routes = routes.add_service(v1);
    }
    if let Ok(v1alpha) = reflection().build_v1alpha() {
        routes = routes.add_service(v1alpha);
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_routes_become_grpc_codes() {
        let body = br#"{"status":404,"message":"no such post"}"#;
        let s = status_of(404, body);
        assert_eq!(s.code(), tonic::Code::NotFound);
        assert_eq!(s.message(), "no such post");
        assert_eq!(status_of(503, b"{}").code(), tonic::Code::Unavailable);
        assert_eq!(status_of(500, b"x").code(), tonic::Code::Internal);
    }

    #[test]
    fn a_post_keeps_its_hangul() {
        let v = serde_json::json!({"id": 7, "title": "안녕하세요", "tags": ["검색"], "likes": 3});
        let p = post_of(&v);
        assert_eq!((p.id, p.title.as_str(), p.likes), (7, "안녕하세요", 3));
        assert_eq!(p.tags, vec!["검색".to_string()]);
    }
}

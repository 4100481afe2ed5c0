//! HTTP/2 (h2c with prior knowledge, or TLS with ALPN `h2`) on hyper's server: a
//! gRPC call (`content-type: application/grpc`) goes to the [`grpc`](super::grpc)
//! routes, anything else through the same dispatch as HTTP/1.1 (routes, faults,
//! worker and database pools, metrics, compression), its request rebuilt in
//! HTTP/1.1's shape.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::body::Body;
use tonic::codegen::Service;

use super::connection::MAX_REQUEST_BODY;
use super::response::Response;
use super::{compression, App};
use crate::http::{split_target, Request};

/// Serves one HTTP/2 connection until the client or the service closes it.
pub(super) async fn serve<S>(app: &Arc<App>, io: S)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let grpc = super::grpc::routes(app.clone());
    let app = app.clone();
    let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let app = app.clone();
        let mut grpc = grpc.clone();
        async move {
            let is_grpc = req
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
            if is_grpc {
                return grpc.call(req).await;
            }
            Ok::<_, Infallible>(plain(&app, req).await)
        }
    });
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(io), service)
        .await;
}

/// A request the service makes of its own routes (the gRPC service's calls):
/// `GET target`, no headers, no body.
pub(super) fn internal_get(target: &str) -> Request {
    let (path, query) = split_target(target);
    Request {
        method: "GET".into(),
        target: target.into(),
        version: 1,
        headers: Vec::new(),
        body: Vec::new(),
        path,
        query,
        keep_alive: true,
        wire_len: 0,
    }
}

/// An HTTP/2 request through the HTTP/1.1 dispatch.
async fn plain(app: &Arc<App>, req: http::Request<Incoming>) -> http::Response<Body> {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_REQUEST_BODY as usize)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes().to_vec(),
        Err(_) => return to_http(Response::error(413, "request body too large"), false),
    };
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_string();
    let (path, query) = split_target(&target);
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let req = Request {
        method: parts.method.as_str().to_string(),
        target,
        version: 1,
        headers,
        body,
        path,
        query,
        keep_alive: true,
        wire_len: 0,
    };
    let resp = match super::chat::llm_route(&req.path) {
        Some(uri) => match app.chat(&req, uri).await {
            super::chat::Chat::Done(resp) => resp,
            super::chat::Chat::Stream(s) => return event_stream(app.stream_h2(s)),
        },
        None => app.handle(&req).await,
    };
    if let Some(len) = resp.restart {
        // `POST /admin/faults` asked for a restart: it starts just after the answer
        // has gone out, as over HTTP/1.1.
        let app = app.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            app.request_restart(len);
        });
    }
    let resp = compression::apply(resp, &req.path, req.header("accept-encoding"));
    to_http(resp, req.is_head())
}

/// The handler's answer in HTTP/2's form (no body for HEAD and 204).
fn to_http(resp: Response, head_only: bool) -> http::Response<Body> {
    let mut b = http::Response::builder().status(resp.status);
    if resp.status != 204 {
        b = b
            .header(http::header::CONTENT_TYPE, resp.content_type)
            .header(http::header::CONTENT_LENGTH, resp.body.len());
    }
    for (name, value) in &resp.headers {
        b = b.header(*name, value.as_str());
    }
    let body = if head_only || resp.status == 204 {
        Body::empty()
    } else {
        Body::new(Full::new(Bytes::copy_from_slice(&resp.body)))
    };
    b.body(body)
        .unwrap_or_else(|_| http::Response::new(Body::empty()))
}

/// A streamed answer: its events as data frames, as the generation sends them.
fn event_stream(rx: tokio::sync::mpsc::Receiver<Bytes>) -> http::Response<Body> {
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        let data = rx.recv().await?;
        Some((Ok::<_, Infallible>(hyper::body::Frame::data(data)), rx))
    });
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "text/event-stream")
        .header(http::header::CACHE_CONTROL, "no-cache")
        .body(Body::new(http_body_util::StreamBody::new(frames)))
        .unwrap_or_else(|_| http::Response::new(Body::empty()))
}

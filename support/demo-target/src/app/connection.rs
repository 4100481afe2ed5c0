//! Serving: the accept loop (h1server's) with the fault ticker and CPU sampler
//! beside it, and one connection's request/response loop.

use std::future::Future;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::task::JoinSet;

use super::response::Response;
use super::App;
use crate::http::{connection_value, read_request, write_response, Head, ReadError, Server};

/// A connection idle this long between requests is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest request body the service reads (`413` above): bodies are JSON
/// documents of a few hundred bytes, and memory must stay bounded whatever a client
/// sends.
const MAX_REQUEST_BODY: u64 = 1024 * 1024;

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

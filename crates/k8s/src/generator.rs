//! The pod side: run one segment, then keep its result directory for the
//! coordinator. Without a shell in the image the pod cannot be `kubectl cp`-ed
//! from, so the generator serves, on one port, through the API server's pod proxy:
//!
//! - `GET /status`: `{"state":"running"}`, then `{"state":"done","exit_code":N}`;
//! - `GET /result.tar`: the result directory as one tar (409 while running);
//! - `POST /done`: the coordinator has it; the generator exits with the run's code.
//!
//! Without `/done` it exits after the serve timeout, so a pod never outlives a
//! vanished coordinator for long.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pado_h1server::{read_request, write_response, Head, Server, ServerThread};
use tokio::sync::Notify;

use crate::archive;

/// How the generator serves its result.
#[derive(Clone, Debug)]
pub struct GeneratorOptions {
    /// Address to listen on (`0.0.0.0:7070` in a pod).
    pub listen: SocketAddr,
    /// The segment's result directory (`--out` of its run).
    pub results: PathBuf,
    /// How long to keep serving after the run when nobody says `/done`.
    pub serve_timeout: Duration,
}

/// What the server knows, shared between the run and the connections.
#[derive(Default)]
struct State {
    exit_code: Option<i32>,
    tar: Option<Arc<Vec<u8>>>,
    pack_error: Option<String>,
}

/// Starts serving, calls `run` (the segment; its exit code), packs the result
/// directory, then serves it until `/done` or the timeout. Returns the run's exit
/// code. An error only when the port cannot be bound (the run has not started then).
pub fn serve_after(opts: &GeneratorOptions, run: impl FnOnce() -> i32) -> std::io::Result<i32> {
    let listener = std::net::TcpListener::bind(opts.listen)?;
    let state = Arc::new(Mutex::new(State::default()));
    let done = Arc::new(Notify::new());
    let server = {
        let state = state.clone();
        let done = done.clone();
        ServerThread::spawn("result-server", move |stop| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let Ok(server) = Server::from_std(listener) else {
                    return;
                };
                server
                    .serve(stop, move |stream, _| {
                        connection(stream, state.clone(), done.clone())
                    })
                    .await;
            });
        })?
    };
    let code = run();
    let packed = archive::pack_dir(&opts.results);
    {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        match packed {
            Ok(t) => s.tar = Some(Arc::new(t)),
            Err(e) => s.pack_error = Some(format!("{}: {e}", opts.results.display())),
        }
        s.exit_code = Some(code);
    }
    // Wait for /done or the timeout on a small runtime of our own.
    if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        rt.block_on(async {
            let _ = tokio::time::timeout(opts.serve_timeout, done.notified()).await;
        });
    }
    server.shutdown();
    Ok(code)
}

async fn connection(
    mut stream: tokio::net::TcpStream,
    state: Arc<Mutex<State>>,
    done: Arc<Notify>,
) {
    let mut buf = Vec::new();
    while let Ok(Some(req)) = read_request(&mut stream, &mut buf, 1024).await {
        let (status, ctype, body): (u16, &str, Arc<Vec<u8>>) = {
            let s = state.lock().unwrap_or_else(|p| p.into_inner());
            match (req.method.as_str(), req.path.as_str()) {
                ("GET", "/status") => {
                    let v = match s.exit_code {
                        None => serde_json::json!({"state": "running"}),
                        Some(c) => serde_json::json!({
                            "state": "done",
                            "exit_code": c,
                            "error": s.pack_error,
                        }),
                    };
                    (
                        200,
                        "application/json",
                        Arc::new(v.to_string().into_bytes()),
                    )
                }
                ("GET", "/result.tar") => match (&s.tar, &s.pack_error) {
                    (Some(t), _) => (200, "application/x-tar", t.clone()),
                    (None, Some(e)) => (500, "text/plain", Arc::new(e.clone().into_bytes())),
                    (None, None) => (
                        409,
                        "text/plain",
                        Arc::new(b"the run is still going".to_vec()),
                    ),
                },
                ("POST", "/done") => {
                    if s.exit_code.is_some() {
                        done.notify_one();
                        (200, "text/plain", Arc::new(b"bye".to_vec()))
                    } else {
                        (
                            409,
                            "text/plain",
                            Arc::new(b"the run is still going".to_vec()),
                        )
                    }
                }
                _ => (404, "text/plain", Arc::new(b"not found".to_vec())),
            }
        };
        let mut head = Head::new(status);
        head.header("Content-Type", ctype)
            .content_length(body.len() as u64)
            .connection(pado_h1server::connection_value(req.keep_alive, req.version));
        if write_response(&mut stream, head, &body, req.is_head())
            .await
            .is_err()
            || !req.keep_alive
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, Vec<u8>) {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
        (status, out[split + 4..].to_vec())
    }

    #[test]
    fn serves_status_then_the_tar_then_exits_on_done() {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let opts = GeneratorOptions {
            listen: addr,
            results: dir.path().to_path_buf(),
            serve_timeout: Duration::from_secs(30),
        };
        let results = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let gen = std::thread::spawn(move || {
            serve_after(&opts, move || {
                rx.recv().unwrap();
                std::fs::write(results.join("run.json"), "{}").unwrap();
                3
            })
            .unwrap()
        });
        // While running: status says so, the tar and /done are refused.
        let mut tries = 0;
        let (st, body) = loop {
            if let Ok(_s) = std::net::TcpStream::connect(addr) {
                break http(addr, "GET", "/status");
            }
            tries += 1;
            assert!(tries < 100, "server never came up");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!((st, body), (200, br#"{"state":"running"}"#.to_vec()));
        assert_eq!(http(addr, "GET", "/result.tar").0, 409);
        assert_eq!(http(addr, "POST", "/done").0, 409);
        tx.send(()).unwrap();
        let status = loop {
            let (_, b) = http(addr, "GET", "/status");
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            if v["state"] == "done" {
                break v;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status["exit_code"], 3);
        let (st, tar) = http(addr, "GET", "/result.tar");
        assert_eq!(st, 200);
        let out = tempfile::tempdir().unwrap();
        archive::unpack(&tar[..], out.path(), 1 << 20).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("run.json")).unwrap(),
            "{}"
        );
        assert_eq!(http(addr, "POST", "/done").0, 200);
        assert_eq!(gen.join().unwrap(), 3);
    }
}

//! A generator that runs one segment and serves it to a coordinator that did not
//! start it directly (a Kubernetes pod: without a shell in the image it cannot be
//! `kubectl cp`-ed from, so the coordinator reaches it through the API server's
//! pod proxy). It serves the [`crate::job`] endpoints on one port from before the
//! run starts (live feed, stop) until the coordinator has the result (`POST /done`).
//!
//! Without `/done` it exits after the serve timeout, so a pod never outlives a
//! vanished coordinator for long.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::access::Access;
use crate::job::{serve_on_thread, Answer, Job, ServeRules, StopFn, PATIENCE, SMALL_BODY};

/// How the generator serves its result.
#[derive(Clone)]
pub struct GeneratorOptions {
    /// Address to listen on (`0.0.0.0:7070` in a pod).
    pub listen: SocketAddr,
    /// The segment's result directory (`--out` of its run).
    pub results: PathBuf,
    /// How long to keep serving after the run when nobody says `/done`.
    pub serve_timeout: Duration,
    /// How the run is stopped when the coordinator asks (`POST /stop`).
    pub stop: StopFn,
}

/// Starts serving, calls `run` (the segment; its exit code), packs the result
/// directory, then serves it until `/done` or the timeout. Returns the run's exit
/// code. An error only when the port cannot be bound (the run has not started then).
pub fn serve_after(opts: &GeneratorOptions, run: impl FnOnce() -> i32) -> std::io::Result<i32> {
    let listener = std::net::TcpListener::bind(opts.listen)?;
    let job = Arc::new(Job::new(opts.results.clone(), opts.stop.clone()));
    let server = {
        let job = job.clone();
        let rules = ServeRules {
            // Reached through the API server's pod proxy, which sets `Host` itself.
            access: Access::default(),
            max_job_body: SMALL_BODY,
            patience: PATIENCE,
            tls: None,
        };
        serve_on_thread("result-server", listener, rules, move |req| {
            job.answer(req)
                .unwrap_or_else(|| Answer::text(404, "not found"))
        })?
    };
    let code = run();
    job.finished(code);
    // Wait for /done or the timeout on a small runtime of our own.
    if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        rt.block_on(async {
            let _ = tokio::time::timeout(opts.serve_timeout, job.collected()).await;
        });
    }
    server.shutdown();
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU32, Ordering};

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
        let stops = Arc::new(AtomicU32::new(0));
        let opts = GeneratorOptions {
            listen: addr,
            results: dir.path().to_path_buf(),
            serve_timeout: Duration::from_secs(30),
            stop: {
                let stops = stops.clone();
                Arc::new(move || {
                    stops.fetch_add(1, Ordering::SeqCst);
                })
            },
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
        assert_eq!(
            (st, body),
            (200, br#"{"seconds":0,"state":"running"}"#.to_vec())
        );
        assert_eq!(http(addr, "GET", "/result.tar").0, 409);
        assert_eq!(http(addr, "POST", "/done").0, 409);
        // The live feed: complete lines only, from the second asked for.
        let (st, live) = http(addr, "GET", "/live?from=0");
        assert_eq!((st, live.len()), (200, 0), "no timeline yet");
        std::fs::write(
            dir.path().join("timeline.jsonl"),
            "{\"t\":0}\n{\"t\":1}\n{\"t\"",
        )
        .unwrap();
        assert_eq!(
            http(addr, "GET", "/live?from=1"),
            (200, b"{\"t\":1}\n".to_vec())
        );
        assert_eq!(http(addr, "GET", "/live?from=x").0, 400);
        // Stop: the run's stop is called once however often it is asked.
        assert_eq!(http(addr, "POST", "/stop").0, 202);
        assert_eq!(http(addr, "POST", "/stop").0, 202);
        assert_eq!(stops.load(Ordering::SeqCst), 1);
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

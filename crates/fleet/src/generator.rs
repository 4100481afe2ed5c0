//! A generator that runs one segment and serves it to a coordinator that did not
//! start it directly (a Kubernetes pod: without a shell in the image it cannot be
//! `kubectl cp`-ed from, so the coordinator reaches it through the API server's
//! pod proxy). It serves the [`crate::job`] endpoints on one port from before the
//! run starts (live feed, stop) until the coordinator has the result (`POST /done`).
//!
//! Without `/done` it exits after the serve timeout, so a pod never outlives a
//! vanished coordinator for long.
//!
//! Every endpoint needs the run's token ([`GeneratorOptions::token`]): any pod of
//! the cluster can reach a pod's port, and a stranger must not stop the run, take
//! its result or tell it `/done`. The request is judged on its head
//! ([`crate::access`]), before its body is read.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::access::{Access, Token};
use crate::job::{
    serve_on_thread, Answer, ControlFn, Job, ServeRules, StopFn, PATIENCE, SMALL_BODY,
};

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
    /// How a change of the load reaches the run (`POST /control`); `None`: the
    /// endpoint answers `409`.
    pub control: Option<ControlFn>,
    /// What every request must carry (`X-Pado-Token` or `Authorization: Bearer`):
    /// the run's own, from the Secret the coordinator created with it.
    pub token: Token,
}

/// Starts serving, calls `run` (the segment; its exit code), packs the result
/// directory, then serves it until `/done` or the timeout. Returns the run's exit
/// code. An error only when the port cannot be bound (the run has not started then).
pub fn serve_after(opts: &GeneratorOptions, run: impl FnOnce() -> i32) -> std::io::Result<i32> {
    let listener = std::net::TcpListener::bind(opts.listen)?;
    let mut job = Job::new(opts.results.clone(), opts.stop.clone());
    if let Some(c) = &opts.control {
        job = job.with_control(c.clone());
    }
    let job = Arc::new(job);
    let server = {
        let job = job.clone();
        let rules = ServeRules {
            access: Access {
                token: Some(opts.token.clone()),
                // Reached through the API server's pod proxy, which sets `Host` itself.
                host_names: None,
            },
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

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    /// One exchange with `extra` header lines; the answer's status and body. The
    /// read is bounded, so a server waiting for a body it was promised shows as a
    /// timeout, not a hang.
    fn raw(addr: SocketAddr, head: &str) -> std::io::Result<(u16, Vec<u8>)> {
        let mut s = std::net::TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(head.as_bytes())?;
        let mut out = Vec::new();
        s.read_to_end(&mut out)?;
        let split = out
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| std::io::Error::other("no head"))?;
        let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
        Ok((status, out[split + 4..].to_vec()))
    }

    fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, Vec<u8>) {
        raw(
            addr,
            &format!("{method} {path} HTTP/1.1\r\nHost: x\r\nX-Pado-Token: {TOKEN}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"),
        )
        .unwrap()
    }

    fn free_addr() -> SocketAddr {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        format!("127.0.0.1:{port}").parse().unwrap()
    }

    /// A generator on `addr` serving `results` with the test token, and how often
    /// its run was told to stop.
    fn counting_stops(
        addr: SocketAddr,
        results: &std::path::Path,
    ) -> (GeneratorOptions, Arc<AtomicU32>) {
        let stops = Arc::new(AtomicU32::new(0));
        let counted = stops.clone();
        let opts = GeneratorOptions {
            listen: addr,
            results: results.to_path_buf(),
            serve_timeout: Duration::from_secs(30),
            stop: Arc::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            }),
            token: Token::new(TOKEN).unwrap(),
            control: None,
        };
        (opts, stops)
    }

    fn wait_up(addr: SocketAddr) {
        for _ in 0..200 {
            if std::net::TcpStream::connect(addr).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("server never came up");
    }

    #[test]
    fn refuses_every_endpoint_without_the_run_s_token_before_reading_a_body() {
        let dir = tempfile::tempdir().unwrap();
        let addr = free_addr();
        let (opts, stops) = counting_stops(addr, dir.path());
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let gen = std::thread::spawn(move || {
            serve_after(&opts, move || {
                rx.recv().unwrap();
                0
            })
            .unwrap()
        });
        wait_up(addr);
        // A body is promised and never sent: were it read first, the answer would
        // wait for the body's stall limit (30 s) and the 5 s read would time out.
        let promised = "Content-Length: 100000\r\n";
        for (method, path) in [
            ("POST", "/stop"),
            ("POST", "/done"),
            ("GET", "/result.tar"),
            ("GET", "/live?from=0"),
            ("GET", "/observed?from=0"),
            ("GET", "/status"),
        ] {
            for auth in [
                String::new(),
                "X-Pado-Token: 0123456789abcdef0123456789abcdeX\r\n".to_string(),
                "X-Pado-Token: \r\n".to_string(),
                format!("Authorization: Basic {TOKEN}\r\n"),
                "Authorization: Bearer 0123456789abcdef\r\n".to_string(),
            ] {
                let head = format!(
                    "{method} {path} HTTP/1.1\r\nHost: 10.0.0.7:7070\r\n{auth}{promised}\r\n"
                );
                let (status, body) = raw(addr, &head).expect("answered before any body byte");
                assert_eq!(status, 401, "{method} {path} with {auth:?}");
                let text = String::from_utf8_lossy(&body);
                assert!(text.contains("X-Pado-Token"), "{text}");
                assert!(!text.contains("0123456789abcdef"), "{text}");
            }
        }
        assert_eq!(
            stops.load(Ordering::SeqCst),
            0,
            "no stranger stopped the run"
        );
        // The run's own token, in pado's header or as a bearer token, is let in.
        assert_eq!(http(addr, "POST", "/stop").0, 202);
        assert_eq!(stops.load(Ordering::SeqCst), 1);
        let bearer = format!(
            "GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(raw(addr, &bearer).unwrap().0, 200);
        tx.send(()).unwrap();
        // Once the run is over, `/done` from a stranger does not end the generator.
        let done =
            "POST /done HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        loop {
            let (_, b) = http(addr, "GET", "/status");
            if String::from_utf8_lossy(&b).contains("done") {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(raw(addr, done).unwrap().0, 401);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!gen.is_finished(), "a refused /done ended the generator");
        assert_eq!(http(addr, "POST", "/done").0, 200);
        assert_eq!(gen.join().unwrap(), 0);
    }

    #[test]
    fn serves_status_then_the_tar_then_exits_on_done() {
        let dir = tempfile::tempdir().unwrap();
        let addr = free_addr();
        let (opts, stops) = counting_stops(addr, dir.path());
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
        // The target's scrapes: none while the file is not there, then its
        // complete lines from the one asked for, the run's state in the header.
        assert_eq!(http(addr, "GET", "/observed?from=0"), (200, Vec::new()));
        std::fs::write(
            dir.path().join("observe.jsonl"),
            "{\"k\":\"endpoint\",\"endpoint\":\"앱\"}\n{\"k\":\"scrape\"}\n{\"k\":",
        )
        .unwrap();
        assert_eq!(
            http(addr, "GET", "/observed?from=1"),
            (200, b"{\"k\":\"scrape\"}\n".to_vec())
        );
        assert_eq!(
            http(addr, "GET", "/observed?from=0").1,
            "{\"k\":\"endpoint\",\"endpoint\":\"앱\"}\n{\"k\":\"scrape\"}\n".as_bytes()
        );
        assert_eq!(http(addr, "GET", "/observed?from=9"), (200, Vec::new()));
        assert_eq!(http(addr, "GET", "/observed?from=-1").0, 400);
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

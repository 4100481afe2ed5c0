//! A `CONNECT` proxy for tests: opens tunnels to loopback targets only, counting
//! every `CONNECT` it receives, the tunnels it opened and those it refused, and
//! optionally asking for `Proxy-Authorization: Basic` credentials (407 without
//! them) or refusing every tunnel with a status of the test's choosing.

use std::collections::BTreeMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

/// How the proxy behaves. Build with `..Default::default()`.
#[derive(Clone, Debug, Default)]
pub struct ProxyOptions {
    /// `(user, password)` the proxy requires; `None` lets every client through.
    pub credentials: Option<(String, String)>,
    /// Answer every `CONNECT` with this status (e.g. 502) instead of a tunnel.
    pub refuse_with: Option<u16>,
}

/// What the proxy has seen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// `CONNECT` requests received (tunnels asked for).
    pub connects: u64,
    /// Tunnels opened (answered 200).
    pub tunnels: u64,
    /// `CONNECT`s answered 407 (missing or wrong credentials).
    pub auth_refused: u64,
    /// `CONNECT`s answered with another refusal (`refuse_with`, a non-loopback
    /// target, or a target that did not accept).
    pub refused: u64,
    /// Requests that were not `CONNECT` (answered 405).
    pub other_methods: u64,
    /// Tunnels opened per target `host:port`.
    pub targets: BTreeMap<String, u64>,
}

/// A running proxy on `127.0.0.1`, stopped when dropped.
pub struct ProxyServer {
    addr: SocketAddr,
    stats: Arc<Mutex<ProxyStats>>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ProxyServer {
    /// Start a proxy on an ephemeral loopback port.
    ///
    /// # Panics
    /// If it cannot start (no loopback, no threads): tests cannot go on.
    pub fn start(opts: ProxyOptions) -> ProxyServer {
        ProxyServer::try_start(opts).expect("pado-testkit: cannot start the proxy")
    }

    fn try_start(opts: ProxyOptions) -> io::Result<ProxyServer> {
        let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(Mutex::new(ProxyStats::default()));
        let (stop, stopped) = watch::channel(false);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("pado-testkit-proxy")
            .build()?;
        let s = Arc::clone(&stats);
        let opts = Arc::new(opts);
        let thread = std::thread::Builder::new()
            .name("pado-testkit-proxy".into())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, opts, s, stopped));
                runtime.shutdown_timeout(Duration::from_secs(1));
            })?;
        Ok(ProxyServer {
            addr,
            stats,
            stop,
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://USER:PASS@127.0.0.1:PORT`.
    pub fn url_with(&self, user: &str, pass: &str) -> String {
        format!("http://{user}:{pass}@{}", self.addr)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> ProxyStats {
        pado_base::lock(&self.stats).clone()
    }
}

impl Drop for ProxyServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    opts: Arc<ProxyOptions>,
    stats: Arc<Mutex<ProxyStats>>,
    mut stopped: watch::Receiver<bool>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            r = listener.accept() => {
                let Ok((tcp, _)) = r else { continue };
                let _ = tcp.set_nodelay(true);
                tasks.spawn(client(tcp, Arc::clone(&opts), Arc::clone(&stats)));
            }
        }
    }
    tasks.abort_all();
}

fn basic(user: &str, pass: &str) -> String {
    // A small base64 of its own: the testkit needs no crate for one header.
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let raw = format!("{user}:{pass}");
    let mut out = String::from("Basic ");
    for c in raw.as_bytes().chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

async fn client(
    mut tcp: tokio::net::TcpStream,
    opts: Arc<ProxyOptions>,
    stats: Arc<Mutex<ProxyStats>>,
) {
    let count = |f: &dyn Fn(&mut ProxyStats)| f(&mut pado_base::lock(&stats));
    let mut buf = Vec::with_capacity(1024);
    let (method, target, auth) = loop {
        let mut chunk = [0u8; 1024];
        let n = match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => {
                let auth = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("proxy-authorization"))
                    .map(|h| String::from_utf8_lossy(h.value).into_owned());
                break (
                    req.method.unwrap_or("").to_string(),
                    req.path.unwrap_or("").to_string(),
                    auth,
                );
            }
            Ok(httparse::Status::Partial) if buf.len() < 16 * 1024 => continue,
            _ => return,
        }
    };
    let answer = |status: &str| {
        format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    };
    if method != "CONNECT" {
        count(&|s| s.other_methods += 1);
        let _ = tcp
            .write_all(answer("405 Method Not Allowed").as_bytes())
            .await;
        return;
    }
    count(&|s| s.connects += 1);
    if let Some((u, p)) = &opts.credentials {
        if auth.as_deref() != Some(basic(u, p).as_str()) {
            count(&|s| s.auth_refused += 1);
            let msg = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"testkit\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            let _ = tcp.write_all(msg.as_bytes()).await;
            return;
        }
    }
    if let Some(code) = opts.refuse_with {
        count(&|s| s.refused += 1);
        let _ = tcp
            .write_all(answer(&format!("{code} Refused")).as_bytes())
            .await;
        return;
    }
    // Loopback targets only: the test kit never reaches beyond the machine.
    let addr = tokio::net::lookup_host(target.as_str())
        .await
        .ok()
        .and_then(|mut a| a.find(|a| a.ip().is_loopback()));
    let upstream = match addr {
        Some(a) => tokio::net::TcpStream::connect(a).await.ok(),
        None => None,
    };
    let Some(mut upstream) = upstream else {
        count(&|s| s.refused += 1);
        let _ = tcp.write_all(answer("502 Bad Gateway").as_bytes()).await;
        return;
    };
    let _ = upstream.set_nodelay(true);
    count(&|s| {
        s.tunnels += 1;
        *s.targets.entry(target.clone()).or_insert(0) += 1;
    });
    if tcp
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut upstream).await;
}

#[cfg(test)]
mod tests {
    #[test]
    fn basic_credentials_are_base64() {
        assert_eq!(super::basic("user", "p@ss"), "Basic dXNlcjpwQHNz");
        assert_eq!(super::basic("a", "b"), "Basic YTpi");
        assert_eq!(super::basic("ab", "c"), "Basic YWI6Yw==");
    }
}

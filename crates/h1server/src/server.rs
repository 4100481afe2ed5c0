//! The lifecycle both servers share: bind a listener, accept connections and serve
//! each on a task of its own until a shutdown signal, then stop accepting and drop
//! every connection; and, for a server that runs next to its caller (tests, `pado
//! demo`), a thread of its own with a handle that stops and joins it.
//!
//! Shutdown is graceful for the caller, not for clients: it returns promptly however
//! many connections hang (a test server's `/stall`, a slow client), because open
//! connections are dropped, not drained.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

/// How long to pause after an accept error that is not about one connection (out of
/// file descriptors and the like) before accepting again, instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Fires a [`ShutdownSignal`]: by [`ShutdownHandle::shutdown`], or by being dropped, so
/// a server cannot outlive whoever started it.
#[derive(Debug)]
pub struct ShutdownHandle(oneshot::Sender<()>);

impl ShutdownHandle {
    /// Tells the server to stop.
    pub fn shutdown(self) {
        let _ = self.0.send(());
    }
}

/// A future that completes when its [`ShutdownHandle`] fires or is dropped; what
/// [`Server::serve`] stops on.
#[derive(Debug)]
pub struct ShutdownSignal(oneshot::Receiver<()>);

impl Future for ShutdownSignal {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

/// A connected pair: the handle for whoever stops the server, the signal for the
/// server.
pub fn shutdown_pair() -> (ShutdownHandle, ShutdownSignal) {
    let (tx, rx) = oneshot::channel();
    (ShutdownHandle(tx), ShutdownSignal(rx))
}

/// A bound listener, not yet serving: bind first to learn the address (port 0 gives
/// a free one), then [`serve`](Server::serve).
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
}

impl Server {
    /// Binds `addr` (must run inside a tokio runtime).
    pub async fn bind(addr: SocketAddr) -> io::Result<Server> {
        Ok(Server {
            listener: TcpListener::bind(addr).await?,
        })
    }

    /// Takes a listener bound with the standard library (e.g. before the runtime
    /// exists, to report a bind error synchronously). Must run inside a tokio runtime.
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<Server> {
        listener.set_nonblocking(true)?;
        Ok(Server {
            listener: TcpListener::from_std(listener)?,
        })
    }

    /// The address it listens on (the real port when bound to port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts connections until `shutdown` completes, handing each to `on_conn` (called
    /// at accept time, so it can count the connection) and running the future it
    /// returns on a task of its own. Then stops accepting and drops every connection
    /// task (closing their sockets, mid-response or not) before returning.
    ///
    /// Accepted sockets have `TCP_NODELAY` set: responses are often written in pieces,
    /// and Nagle's algorithm would hold each small piece back for up to 40 ms.
    pub async fn serve<F, C>(self, shutdown: impl Future<Output = ()>, mut on_conn: F)
    where
        F: FnMut(TcpStream, SocketAddr) -> C,
        C: Future<Output = ()> + Send + 'static,
    {
        let mut conns: JoinSet<()> = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        conns.spawn(on_conn(stream, peer));
                    }
                    // One connection's failure; the next accept may well succeed.
                    Err(e) if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
                    ) => {}
                    Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
                },
                // Reap finished connections so the set stays as large as the open ones.
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        conns.shutdown().await;
    }
}

/// A server running on a thread of its own (typically with a tokio runtime of its
/// own). [`shutdown`](ServerThread::shutdown), or dropping it, fires the server's
/// [`ShutdownSignal`] and waits for the thread to end.
#[derive(Debug)]
pub struct ServerThread {
    stop: Option<ShutdownHandle>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Starts a thread named `name` running `run`, which gets the signal to stop on.
    pub fn spawn(
        name: &str,
        run: impl FnOnce(ShutdownSignal) + Send + 'static,
    ) -> io::Result<ServerThread> {
        let (stop, signal) = shutdown_pair();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || run(signal))?;
        Ok(ServerThread {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Serves `listener` on a thread named `name` with a current-thread tokio runtime
    /// of its own, handing each connection to `on_conn` as [`Server::serve`] does,
    /// until the returned handle is shut down or dropped. The one home of the loop
    /// that every in-process server (the dashboard, a fleet agent's job server)
    /// runs, so that each states only what it does with a connection.
    ///
    /// If the runtime cannot be built or the listener cannot be handed to tokio, the
    /// thread ends at once and the listener is closed: connections are then refused,
    /// which is what a caller waiting on the address sees.
    pub fn serve_listener<F, C>(
        name: &str,
        listener: std::net::TcpListener,
        on_conn: F,
    ) -> io::Result<ServerThread>
    where
        F: FnMut(TcpStream, SocketAddr) -> C + Send + 'static,
        C: Future<Output = ()> + Send + 'static,
    {
        ServerThread::spawn(name, move |stop| {
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
                server.serve(stop, on_conn).await;
            });
        })
    }

    /// Stops the server and waits for its thread to end.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.shutdown();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn serves_until_shutdown_then_drops_connections() {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = std_listener.local_addr().unwrap();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let server = ServerThread::spawn("h1server-test", move |stop| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let server = Server::from_std(std_listener).unwrap();
                ready_tx.send(()).unwrap();
                server
                    .serve(stop, |mut stream, _| async move {
                        use tokio::io::AsyncWriteExt;
                        let _ = stream.write_all(b"hi").await;
                        // Hang: shutdown must not wait for this.
                        std::future::pending::<()>().await;
                    })
                    .await;
            });
        })
        .unwrap();
        ready_rx.recv().unwrap();
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut hi = [0u8; 2];
        c.read_exact(&mut hi).unwrap();
        assert_eq!(&hi, b"hi");
        server.shutdown();
        // The hanging connection was dropped: EOF (or a reset), not a timeout.
        let mut rest = Vec::new();
        match c.read_to_end(&mut rest) {
            Ok(n) => assert_eq!(n, 0),
            Err(e) => assert_ne!(e.kind(), io::ErrorKind::WouldBlock),
        }
        assert!(std::net::TcpStream::connect(addr)
            .and_then(|mut s| {
                s.write_all(b"x")?;
                s.set_read_timeout(Some(Duration::from_secs(5)))?;
                s.read(&mut [0u8; 1])
            })
            .map_or(true, |n| n == 0));
    }
}

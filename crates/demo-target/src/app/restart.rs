//! The restart fault (`restart_ms`): the service goes away and comes back on the same
//! port, like a process restart. [`connection::serve`](super::connection::serve)
//! stops serving when a restart is asked for (dropping every connection), waits
//! here with the listener closed, resets what a new process would not have (caches,
//! leaked memory and connections, its start time) and binds the port again.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::net::TcpSocket;

use super::{unix_now, App};
use crate::http::Server;
use pado_base::lock;

/// Most connections waiting to be accepted (the listen backlog).
const BACKLOG: u32 = 1024;
/// The first pause between attempts to bind the port again; it doubles up to
/// [`REBIND_MAX_PAUSE`].
const REBIND_PAUSE: Duration = Duration::from_millis(10);
const REBIND_MAX_PAUSE: Duration = Duration::from_millis(200);

impl App {
    /// Asks the serving loop to restart for `len` (a longer one wins if two are
    /// asked for before it starts).
    pub(crate) fn request_restart(&self, len: Duration) {
        {
            let mut p = lock(&self.restart_pending);
            *p = Some(p.map_or(len, |cur| cur.max(len)));
        }
        self.restart_wanted.notify_one();
    }

    /// Waits until a restart is asked for; returns how long the listener stays
    /// closed.
    pub(super) async fn restart_requested(&self) -> Duration {
        loop {
            if let Some(len) = lock(&self.restart_pending).take() {
                return len;
            }
            self.restart_wanted.notified().await;
        }
    }

    /// What a new process would not have: cached entries, the leak's memory,
    /// connections leaked from the pool, a stall in progress; its start time is now.
    fn reset_as_restarted(&self) {
        self.details.clear();
        self.searches.clear();
        self.leak.free();
        self.db.return_leaked();
        *lock(&self.stalled_until) = None;
        *lock(&self.started) = (Instant::now(), unix_now());
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// The restart itself, once every connection is closed: `len` with no
    /// listener, then the state reset and `addr` bound again (retried until it
    /// works). `None` when `shutdown` completes first.
    pub(super) async fn restart<S>(
        &self,
        addr: SocketAddr,
        len: Duration,
        shutdown: &mut Pin<&mut S>,
    ) -> Option<Server>
    where
        S: Future<Output = ()>,
    {
        tokio::select! {
            _ = shutdown.as_mut() => return None,
            _ = tokio::time::sleep(len) => {}
        }
        self.reset_as_restarted();
        let mut pause = REBIND_PAUSE;
        loop {
            match bind_reusing(addr) {
                Ok(server) => return Some(server),
                Err(_) => {
                    tokio::select! {
                        _ = shutdown.as_mut() => return None,
                        _ = tokio::time::sleep(pause) => {}
                    }
                    pause = (pause * 2).min(REBIND_MAX_PAUSE);
                }
            }
        }
    }
}

/// Binds `addr` with `SO_REUSEADDR`, so the connections the restart closed (in
/// `TIME_WAIT` on this port) do not keep the port from being bound again.
fn bind_reusing(addr: SocketAddr) -> io::Result<Server> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    let listener = socket.listen(BACKLOG)?;
    Server::from_std(listener.into_std()?)
}

//! Name resolution when a connection is made, timed as its own phase
//! (`http_req_dns`), with the run's cache of answers as k6's `dns: {ttl}` keeps one.
//!
//! A host given as an IP address is never resolved (its phase is 0). A name is looked
//! up through the system's resolver (`getaddrinfo`, so `/etc/hosts` and
//! `nsswitch.conf` apply) on tokio's blocking pool, off the worker thread; its answer
//! is kept for `ttl` and shared by every worker of the run (a lock taken only when a
//! connection is made, never per request on a kept-alive connection).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pado_metrics::ErrorKind;

/// How long a resolved answer is reused when nothing says otherwise: k6's default
/// (`dns: {ttl: "5m"}`).
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// The addresses of one host name, resolved when a connection needs them and kept for
/// a time-to-live. Shared (`Arc`) by the clones of an origin on every worker.
#[derive(Debug)]
pub struct NameCache {
    /// The name, without IPv6 brackets.
    name: String,
    /// The port the addresses carry.
    port: u16,
    /// How long an answer is reused; zero resolves for every new connection.
    ttl: Duration,
    /// The last answer and when it was looked up.
    entry: Mutex<Option<(Instant, Arc<[SocketAddr]>)>>,
}

impl NameCache {
    /// A cache for `name:port` whose answers live `ttl`.
    pub fn new(name: &str, port: u16, ttl: Duration) -> Self {
        NameCache {
            name: name.to_string(),
            port,
            ttl,
            entry: Mutex::new(None),
        }
    }

    /// The answer kept, if still fresh.
    fn cached(&self) -> Option<Arc<[SocketAddr]>> {
        if self.ttl.is_zero() {
            return None;
        }
        let e = pado_base::lock(&self.entry);
        e.as_ref()
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, a)| a.clone())
    }

    /// The addresses to connect to and how long the lookup took (zero when the cache
    /// answered). A name that does not resolve within `budget`, or at all, is `dns`.
    pub async fn resolve(
        &self,
        budget: Duration,
    ) -> Result<(Arc<[SocketAddr]>, Duration), ErrorKind> {
        if let Some(a) = self.cached() {
            return Ok((a, Duration::ZERO));
        }
        let t0 = Instant::now();
        let lookup = tokio::net::lookup_host((self.name.as_str(), self.port));
        let addrs: Arc<[SocketAddr]> = match tokio::time::timeout(budget, lookup).await {
            Ok(Ok(it)) => it.collect(),
            Ok(Err(_)) | Err(_) => return Err(ErrorKind::Dns),
        };
        let took = t0.elapsed();
        if addrs.is_empty() {
            return Err(ErrorKind::Dns);
        }
        if !self.ttl.is_zero() {
            let mut e = pado_base::lock(&self.entry);
            *e = Some((Instant::now(), addrs.clone()));
        }
        Ok((addrs, took))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_name_is_looked_up_then_served_from_the_cache_until_its_ttl() {
        let c = NameCache::new("localhost", 8080, Duration::from_secs(60));
        let (a, took) = rt().block_on(c.resolve(Duration::from_secs(5))).unwrap();
        assert!(!a.is_empty() && a.iter().all(|s| s.port() == 8080), "{a:?}");
        assert!(a.iter().all(|s| s.ip().is_loopback()), "{a:?}");
        assert!(took > Duration::ZERO);
        let (b, took) = rt().block_on(c.resolve(Duration::from_secs(5))).unwrap();
        assert_eq!(took, Duration::ZERO, "the cache answered");
        assert!(Arc::ptr_eq(&a, &b));
        // Stale: looked up again.
        c.entry.lock().unwrap().as_mut().unwrap().0 -= Duration::from_secs(61);
        let (_, took) = rt().block_on(c.resolve(Duration::from_secs(5))).unwrap();
        assert!(took > Duration::ZERO);
    }

    #[test]
    fn ttl_zero_looks_up_every_time() {
        let c = NameCache::new("localhost", 1, Duration::ZERO);
        for _ in 0..2 {
            let (_, took) = rt().block_on(c.resolve(Duration::from_secs(5))).unwrap();
            assert!(took > Duration::ZERO);
        }
        assert!(c.entry.lock().unwrap().is_none());
    }
}

//! A small LRU-ish in-process cache (two generations) with hit/miss counters.
//!
//! New entries go into the "hot" generation; when it holds half the
//! capacity, it becomes the "cold" generation and the old cold one is
//! dropped. A hit in the cold generation moves the entry back to hot. So
//! recently used entries survive and the total never exceeds the capacity,
//! with O(1) work per operation — the behaviour (a bounded cache whose hit
//! ratio depends on how skewed the traffic is) is what matters here, not
//! exact LRU order.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Generations<K, V> {
    hot: HashMap<K, (V, Instant)>,
    cold: HashMap<K, (V, Instant)>,
}

/// See the module docs. `capacity == 0` means every lookup misses.
#[derive(Debug)]
pub(crate) struct Cache<K, V> {
    gens: Mutex<Generations<K, V>>,
    capacity: usize,
    ttl: Option<Duration>,
    hits: AtomicU64,
    misses: AtomicU64,
    puts: AtomicU64,
    evictions: AtomicU64,
}

/// Counters and size of a cache, for `/metrics`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub puts: u64,
    pub evictions: u64,
    pub size: usize,
    pub capacity: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Cache<K, V> {
    /// A cache of at most `capacity` entries, each valid for `ttl` (if any).
    pub(crate) fn new(capacity: usize, ttl: Option<Duration>) -> Self {
        Cache {
            gens: Mutex::new(Generations {
                hot: HashMap::new(),
                cold: HashMap::new(),
            }),
            capacity,
            ttl,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            puts: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations<K, V>> {
        pado_base::lock(&self.gens)
    }

    /// Entries a generation may hold before it is rotated.
    fn half(&self) -> usize {
        self.capacity.div_ceil(2).max(1)
    }

    /// Looks `key` up; `enabled == false` (the `cache: false` fault) counts a
    /// miss without looking, so the hit ratio shows the cache being off.
    pub(crate) fn get(&self, key: &K, enabled: bool) -> Option<V> {
        if !enabled || self.capacity == 0 {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let now = Instant::now();
        let fresh = |at: &Instant| match self.ttl {
            Some(ttl) => now.duration_since(*at) < ttl,
            None => true,
        };
        let mut g = self.lock();
        let found = if let Some((v, at)) = g.hot.get(key) {
            fresh(at).then(|| v.clone())
        } else if let Some((v, at)) = g.cold.remove(key) {
            if fresh(&at) {
                let out = v.clone();
                self.insert_locked(&mut g, key.clone(), v, at);
                Some(out)
            } else {
                None
            }
        } else {
            None
        };
        drop(g);
        if found.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    /// Stores `value` (no-op when disabled).
    pub(crate) fn put(&self, key: K, value: V, enabled: bool) {
        if !enabled || self.capacity == 0 {
            return;
        }
        self.puts.fetch_add(1, Ordering::Relaxed);
        let mut g = self.lock();
        g.cold.remove(&key);
        self.insert_locked(&mut g, key, value, Instant::now());
    }

    fn insert_locked(&self, g: &mut Generations<K, V>, key: K, value: V, at: Instant) {
        g.hot.insert(key, (value, at));
        if g.hot.len() >= self.half() {
            let hot = std::mem::take(&mut g.hot);
            let dropped = std::mem::replace(&mut g.cold, hot);
            self.evictions
                .fetch_add(dropped.len() as u64, Ordering::Relaxed);
        }
    }

    /// Drops `key` (after a write made it stale).
    pub(crate) fn invalidate(&self, key: &K) {
        let mut g = self.lock();
        g.hot.remove(key);
        g.cold.remove(key);
    }

    /// Drops every entry (a restart starts cold); the counters go on.
    pub(crate) fn clear(&self) {
        let mut g = self.lock();
        g.hot.clear();
        g.cold.clear();
    }

    /// Current counters.
    pub(crate) fn stats(&self) -> CacheStats {
        let g = self.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            puts: self.puts.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            size: g.hot.len() + g.cold.len(),
            capacity: self.capacity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_keeps_recent_entries() {
        for cap in [1usize, 2, 3, 10, 101] {
            let c: Cache<u64, u64> = Cache::new(cap, None);
            for i in 0..1_000 {
                c.put(i, i * 2, true);
                assert!(c.stats().size <= cap, "cap {cap} size {}", c.stats().size);
                assert_eq!(c.get(&i, true), Some(i * 2), "just inserted, cap {cap}");
            }
        }
        let c: Cache<u64, u64> = Cache::new(100, None);
        for i in 0..10 {
            c.put(i, i, true);
        }
        // Keep touching 0..10 while inserting many others: they survive.
        for i in 100..1_000 {
            c.put(i, i, true);
            for k in 0..10 {
                assert_eq!(c.get(&k, true), Some(k));
            }
        }
        let s = c.stats();
        assert!(s.hits >= 9_000);
        assert!(s.evictions > 0);
    }

    #[test]
    fn disabled_and_zero_capacity_miss() {
        let c: Cache<u64, u64> = Cache::new(0, None);
        c.put(1, 1, true);
        assert_eq!(c.get(&1, true), None);
        let c: Cache<u64, u64> = Cache::new(10, None);
        c.put(1, 1, true);
        assert_eq!(c.get(&1, false), None);
        assert_eq!(c.get(&1, true), Some(1));
        let s = c.stats();
        assert_eq!((s.hits, s.misses), (1, 1));
        c.invalidate(&1);
        assert_eq!(c.get(&1, true), None);
    }

    #[test]
    fn ttl_expires() {
        let c: Cache<u64, u64> = Cache::new(10, Some(Duration::from_millis(20)));
        c.put(1, 1, true);
        assert_eq!(c.get(&1, true), Some(1));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(c.get(&1, true), None);
    }
}

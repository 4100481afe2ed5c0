//! Closed seconds for whoever subscribes, through bounded channels: the aggregator
//! never waits for a subscriber; one that falls behind loses seconds, counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TrySendError};
use pado_metrics::SecondRecord;

use pado_base::lock;

/// One subscriber's end of the fan-out.
struct Feed {
    tx: Sender<Arc<SecondRecord>>,
    lost: Arc<AtomicU64>,
}

/// Every subscription of a run: the fan-out a [`crate::LiveRun`] of any kind (a
/// local run, a coordinator merging generators' seconds) hands closed seconds to.
#[derive(Default)]
pub struct Subscribers {
    feeds: Mutex<Vec<Feed>>,
}

impl Subscribers {
    /// A new subscription holding up to `capacity` seconds (at least 1).
    pub fn add(&self, capacity: usize) -> Subscription {
        let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
        let lost = Arc::new(AtomicU64::new(0));
        lock(&self.feeds).push(Feed {
            tx,
            lost: lost.clone(),
        });
        Subscription { rx, lost }
    }

    /// Hand `r` to every subscriber that has room; count it lost for the others.
    /// A subscription that was dropped is forgotten.
    pub fn send(&self, r: &SecondRecord) {
        let mut feeds = lock(&self.feeds);
        if feeds.is_empty() {
            return;
        }
        let r = Arc::new(r.clone());
        feeds.retain(|f| match f.tx.try_send(r.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                f.lost.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }

    /// End every subscription (after the seconds already sent).
    pub fn close(&self) {
        lock(&self.feeds).clear();
    }
}

/// Closed seconds of one run, in order, as the timeline gets them.
pub struct Subscription {
    rx: Receiver<Arc<SecondRecord>>,
    lost: Arc<AtomicU64>,
}

impl Subscription {
    /// The next closed second, waiting for it; `None` once the run has ended and
    /// every second sent was read.
    pub fn recv(&self) -> Option<Arc<SecondRecord>> {
        self.rx.recv().ok()
    }

    /// The next closed second, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Arc<SecondRecord>> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// Seconds this subscriber lost because its channel was full.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

impl Iterator for Subscription {
    type Item = Arc<SecondRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        self.recv()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_channel_loses_seconds_and_counts_them() {
        let subs = Subscribers::default();
        let slow = subs.add(2);
        let fast = subs.add(16);
        for t in 0..5 {
            subs.send(&SecondRecord::new(t));
        }
        subs.close();
        let got: Vec<u32> = fast.map(|r| r.t).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        assert_eq!(slow.lost(), 3);
        let got: Vec<u32> = slow.map(|r| r.t).collect();
        assert_eq!(got, vec![0, 1]);
    }

    #[test]
    fn a_dropped_subscription_is_forgotten() {
        let subs = Subscribers::default();
        drop(subs.add(1));
        subs.send(&SecondRecord::new(0));
        assert!(lock(&subs.feeds).is_empty());
    }
}

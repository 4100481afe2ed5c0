//! The memory-leak fault: every API request retains some memory for good, really
//! allocated and written so that the process's resident memory grows, until a
//! restart frees it. Switching the fault off stops the growth and frees nothing,
//! as fixing a configuration does not undo a leak.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Most memory the leak holds (1 GiB): past it, requests retain nothing more, so
/// a leak forgotten on a shared machine cannot take it down.
pub(crate) const MAX_LEAKED_BYTES: u64 = 1 << 30;

/// The retained blocks and their total.
#[derive(Debug, Default)]
pub(crate) struct Leak {
    blocks: Mutex<Vec<Box<[u8]>>>,
    bytes: AtomicU64,
}

impl Leak {
    /// Retains `kib` KiB more (nothing past [`MAX_LEAKED_BYTES`]). Every page is
    /// written, so the memory is resident, not merely reserved.
    pub(crate) fn retain(&self, kib: u64) {
        if kib == 0 {
            return;
        }
        let len = kib * 1024;
        let reserved = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                (b + len <= MAX_LEAKED_BYTES).then_some(b + len)
            });
        if reserved.is_err() {
            return;
        }
        // Non-zero bytes: a zeroed allocation could stay untouched pages.
        let block = vec![0xA5u8; len as usize].into_boxed_slice();
        pado_base::lock(&self.blocks).push(block);
    }

    /// Bytes retained now.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    /// Frees everything retained (a restart).
    pub(crate) fn free(&self) {
        let blocks = std::mem::take(&mut *pado_base::lock(&self.blocks));
        self.bytes.store(0, Ordering::Release);
        drop(blocks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retains_exactly_and_frees() {
        let l = Leak::default();
        for _ in 0..10 {
            l.retain(64);
        }
        l.retain(0);
        assert_eq!(l.bytes(), 10 * 64 * 1024);
        let held: usize = l.blocks.lock().unwrap().iter().map(|b| b.len()).sum();
        assert_eq!(held as u64, l.bytes());
        assert!(l.blocks.lock().unwrap()[3].iter().all(|&b| b == 0xA5));
        l.free();
        assert_eq!(l.bytes(), 0);
        assert!(l.blocks.lock().unwrap().is_empty());
    }

    #[test]
    fn stops_at_the_cap() {
        let l = Leak::default();
        l.bytes.store(MAX_LEAKED_BYTES - 1024, Ordering::Release);
        l.retain(2);
        assert_eq!(l.bytes(), MAX_LEAKED_BYTES - 1024);
        l.retain(1);
        assert_eq!(l.bytes(), MAX_LEAKED_BYTES);
    }
}

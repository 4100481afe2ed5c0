//! A global allocator that counts, per thread and only while asked, how far the heap
//! grew: the driver turns it on around each input on its worker thread, so an input
//! that makes a parser allocate far beyond its size is reported like a panic.
//!
//! It counts net bytes (allocations minus frees made on the same thread) and keeps the
//! peak. Threads that never turn it on pay one thread-local read per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// [`System`], with per-thread accounting while [`start`] is in effect.
pub struct Counting;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    // `try_with`: allocations during thread teardown must not touch dead locals.
    let _ = ON.try_with(|on| {
        if on.get() {
            let live = LIVE.with(|l| {
                let v = l.get().saturating_add(delta);
                l.set(v);
                v
            });
            PEAK.with(|p| p.set(p.get().max(live)));
        }
    });
}

// SAFETY: every call is forwarded unchanged to `System`; the bookkeeping only touches
// `const`-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - layout.size() as isize);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Start counting on this thread, from zero.
pub fn start() {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    ON.with(|on| on.set(true));
}

/// Stop counting on this thread; the largest net growth of the heap since [`start`].
pub fn stop() -> usize {
    ON.with(|on| on.set(false));
    PEAK.with(|p| p.get().max(0) as usize)
}

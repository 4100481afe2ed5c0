//! The memory a worker's QuickJS runtime allocates: small blocks kept on a
//! free list per size, in front of the C library's `malloc`.
//!
//! Why: a k6 response and request are some hundred small JavaScript objects,
//! strings and property arrays, made and freed once per request; with glibc's
//! `malloc` behind them (and QuickJS asking the size of every block it makes
//! and frees, for its accounting) that was a fifth of the instructions a
//! scripted request costs. A runtime is used by one thread at a time (its
//! worker's), so its lists need no lock and no atomic: a block freed is pushed
//! on its size's list and the next allocation of that size pops it, a few
//! instructions each.
//!
//! The lists hold at most [`MAX_KEPT`] bytes: past that a freed block goes back
//! to `malloc`, so what a runtime keeps aside is bounded whatever the script
//! does. Blocks larger than [`MAX_SMALL`] go to `malloc` and `free` directly.
//! Every block carries its size in a header just before the address QuickJS
//! sees (QuickJS asks the size of a block without its allocator at hand).

use std::ptr;

use rquickjs::allocator::Allocator;

/// The header before each block: the usable size, in a word (QuickJS's values
/// need 8-byte alignment, which `malloc`'s 16 plus this word keeps).
const HEADER: usize = std::mem::size_of::<usize>();
/// The size classes' step: a request is rounded up to a multiple of it.
const STEP: usize = 16;
/// The largest block kept on a list; larger ones go to `malloc` directly.
const MAX_SMALL: usize = 1024;
/// How many lists (one per multiple of [`STEP`] up to [`MAX_SMALL`]).
const CLASSES: usize = MAX_SMALL / STEP;
/// The most bytes of freed blocks a runtime keeps for reuse.
pub(crate) const MAX_KEPT: usize = 4 * 1024 * 1024;

/// A worker runtime's allocator (see the module's words).
pub(crate) struct PoolAllocator {
    /// Each class's list of freed blocks (the address QuickJS saw), linked
    /// through their first word; null when empty.
    free: [*mut u8; CLASSES],
    /// Bytes (usable sizes) on the lists now.
    kept: usize,
}

impl PoolAllocator {
    pub(crate) fn new() -> Self {
        PoolAllocator {
            free: [ptr::null_mut(); CLASSES],
            kept: 0,
        }
    }

    /// The class of a request of `size` bytes (1 to [`MAX_SMALL`]), and its
    /// usable size.
    #[inline]
    fn class_of(size: usize) -> (usize, usize) {
        let c = size.max(1).div_ceil(STEP);
        (c - 1, c * STEP)
    }

    /// A fresh block from `malloc` with `usable` bytes after its header; null
    /// when there is no memory.
    #[inline]
    fn fresh(usable: usize) -> *mut u8 {
        let Some(total) = usable.checked_add(HEADER) else {
            return ptr::null_mut();
        };
        // SAFETY: malloc has no preconditions.
        let base = unsafe { libc::malloc(total) }.cast::<u8>();
        if base.is_null() {
            return base;
        }
        // SAFETY: `base` holds `total` bytes, at least a header's; malloc's
        // alignment (16) suits a word.
        unsafe {
            base.cast::<usize>().write(usable);
            base.add(HEADER)
        }
    }

    /// The usable size recorded before `p`.
    ///
    /// # Safety
    /// `p` was returned by this allocator and not freed since.
    #[inline]
    unsafe fn size_at(p: *mut u8) -> usize {
        // SAFETY: the caller's promise: a header precedes `p`.
        unsafe { p.sub(HEADER).cast::<usize>().read() }
    }
}

impl Default for PoolAllocator {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every block returned holds at least the bytes asked for after a
// header that records its usable size (a class's size, a multiple of 16 at
// least as large as the request, or the request rounded up to 8 for a large
// one), at an address 8-aligned (malloc's 16-aligned block plus one word);
// `usable_size` reads that header; a block on a list is never handed out twice
// (it is popped before use) and is freed once, to `malloc`'s `free`, when the
// list drops it.
unsafe impl Allocator for PoolAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if size > MAX_SMALL {
            return Self::fresh((size + 7) & !7);
        }
        let (c, usable) = Self::class_of(size);
        let head = self.free[c];
        if head.is_null() {
            return Self::fresh(usable);
        }
        // SAFETY: a block on list `c` is a freed block of this allocator with
        // `usable` bytes, its first word the next block of the list.
        self.free[c] = unsafe { head.cast::<*mut u8>().read() };
        self.kept -= usable;
        head
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return ptr::null_mut();
        };
        let p = self.alloc(total);
        if !p.is_null() {
            // SAFETY: `p` holds at least `total` bytes.
            unsafe { ptr::write_bytes(p, 0, total) };
        }
        p
    }

    unsafe fn dealloc(&mut self, p: *mut u8) {
        if p.is_null() {
            return;
        }
        // SAFETY: the caller's promise: `p` came from this allocator.
        let usable = unsafe { Self::size_at(p) };
        if usable > MAX_SMALL || self.kept + usable > MAX_KEPT {
            // SAFETY: the header's address is what malloc returned.
            unsafe { libc::free(p.sub(HEADER).cast()) };
            return;
        }
        let c = usable / STEP - 1;
        // SAFETY: `p` has at least `usable` (≥ 16) bytes, no longer in use.
        unsafe { p.cast::<*mut u8>().write(self.free[c]) };
        self.free[c] = p;
        self.kept += usable;
    }

    unsafe fn realloc(&mut self, p: *mut u8, new_size: usize) -> *mut u8 {
        if p.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: the caller's promise: `p` came from this allocator.
        let old = unsafe { Self::size_at(p) };
        if new_size <= old && (old <= MAX_SMALL || new_size > MAX_SMALL) {
            // It fits where it is (a small block is not shrunk: its class
            // stays; a large one keeps its bytes until it moves to a class).
            return p;
        }
        if old > MAX_SMALL && new_size > MAX_SMALL {
            let usable = (new_size + 7) & !7;
            // SAFETY: the header's address is what malloc returned; the
            // header is rewritten with the new size.
            unsafe {
                let base = libc::realloc(p.sub(HEADER).cast(), usable + HEADER).cast::<u8>();
                if base.is_null() {
                    return base;
                }
                base.cast::<usize>().write(usable);
                return base.add(HEADER);
            }
        }
        let q = self.alloc(new_size);
        if !q.is_null() {
            // SAFETY: both blocks hold at least `min(old, new_size)` bytes and
            // are distinct; `p` is freed once, here.
            unsafe {
                ptr::copy_nonoverlapping(p, q, old.min(new_size));
                self.dealloc(p);
            }
        }
        q
    }

    unsafe fn usable_size(p: *mut u8) -> usize {
        // SAFETY: the caller's promise: `p` came from this allocator.
        unsafe { Self::size_at(p) }
    }
}

impl Drop for PoolAllocator {
    fn drop(&mut self) {
        for head in &mut self.free {
            let mut p = std::mem::replace(head, ptr::null_mut());
            while !p.is_null() {
                // SAFETY: each block on a list is a freed block of this
                // allocator, its first word the next; freed once, here.
                unsafe {
                    let next = p.cast::<*mut u8>().read();
                    libc::free(p.sub(HEADER).cast());
                    p = next;
                }
            }
        }
        self.kept = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fill `n` bytes at `p` with a pattern of `seed`, and check them.
    fn fill(p: *mut u8, n: usize, seed: u8) {
        for i in 0..n {
            // SAFETY: the tests hand blocks of at least `n` bytes.
            unsafe { p.add(i).write(seed.wrapping_add(i as u8)) };
        }
    }
    fn holds(p: *mut u8, n: usize, seed: u8) -> bool {
        // SAFETY: as `fill`.
        (0..n).all(|i| unsafe { p.add(i).read() } == seed.wrapping_add(i as u8))
    }

    #[test]
    fn every_size_gets_its_bytes_aligned_and_its_usable_size() {
        let mut a = PoolAllocator::new();
        let mut blocks = Vec::new();
        for size in (1..=2100).step_by(7) {
            let p = a.alloc(size);
            assert!(!p.is_null());
            assert_eq!(p as usize % 8, 0, "size {size}");
            // SAFETY: `p` is this allocator's.
            let usable = unsafe { PoolAllocator::usable_size(p) };
            assert!(
                usable >= size && usable < size + STEP,
                "size {size}: {usable}"
            );
            fill(p, size, size as u8);
            blocks.push((p, size));
        }
        for (p, size) in blocks {
            assert!(holds(p, size, size as u8), "size {size}");
            // SAFETY: each block freed once.
            unsafe { a.dealloc(p) };
        }
    }

    #[test]
    fn a_freed_small_block_is_the_next_of_its_size_and_calloc_zeroes_it() {
        let mut a = PoolAllocator::new();
        let p = a.alloc(40);
        fill(p, 40, 3);
        // SAFETY: freed once.
        unsafe { a.dealloc(p) };
        assert_eq!(a.kept, 48);
        let q = a.calloc(5, 8);
        assert_eq!(q, p, "the freed block is reused");
        assert_eq!(a.kept, 0);
        // SAFETY: 40 bytes of `q`.
        assert!((0..40).all(|i| unsafe { q.add(i).read() } == 0));
        // A large block is never kept.
        let big = a.alloc(MAX_SMALL + 1);
        // SAFETY: both freed once.
        unsafe {
            a.dealloc(big);
            a.dealloc(q);
        }
        assert_eq!(a.kept, 48);
        assert!(
            a.calloc(usize::MAX, 2).is_null(),
            "an overflowing calloc fails"
        );
    }

    #[test]
    fn realloc_keeps_the_bytes_across_classes_and_to_and_from_large() {
        let mut a = PoolAllocator::new();
        let mut p = a.alloc(10);
        fill(p, 10, 9);
        let mut kept = 10;
        // Grow through small classes into large ones and back down.
        for size in [20, 33, 500, 1024, 1025, 5000, 100_000, 3000, 900, 17, 5] {
            // SAFETY: `p` is this allocator's, live.
            p = unsafe { a.realloc(p, size) };
            assert!(!p.is_null());
            let n = kept.min(size);
            assert!(holds(p, n, 9), "to {size}");
            // SAFETY: as above.
            assert!(unsafe { PoolAllocator::usable_size(p) } >= size);
            fill(p, size, 9);
            kept = size;
        }
        // SAFETY: freed once.
        unsafe { a.dealloc(p) };
        // SAFETY: a null block is a fresh allocation, as C's realloc.
        let q = unsafe { a.realloc(ptr::null_mut(), 64) };
        assert!(!q.is_null());
        // SAFETY: freed once.
        unsafe { a.dealloc(q) };
    }

    #[test]
    fn what_the_lists_keep_is_bounded() {
        let mut a = PoolAllocator::new();
        let n = MAX_KEPT / MAX_SMALL + 100;
        let blocks: Vec<*mut u8> = (0..n).map(|_| a.alloc(MAX_SMALL)).collect();
        for p in blocks {
            // SAFETY: each freed once.
            unsafe { a.dealloc(p) };
            assert!(a.kept <= MAX_KEPT);
        }
        assert_eq!(a.kept, MAX_KEPT);
    }

    #[test]
    fn a_runtime_on_it_runs_javascript() {
        let rt = rquickjs::Runtime::new_with_alloc(PoolAllocator::new()).unwrap();
        let ctx = rquickjs::Context::full(&rt).unwrap();
        let n: i32 = ctx
            .with(|ctx| {
                ctx.eval(
                    r#"let o = []; for (let i = 0; i < 10000; i++) o.push({ i, s: "x".repeat(i % 300) });
                       o.filter((v) => v.s.length === 7).length"#,
                )
            })
            .unwrap();
        assert_eq!(n, 10000 / 300 + 1);
    }
}

//! The memory a worker's QuickJS runtime allocates: small blocks carved from
//! pages that each hold blocks of one size, and a free list per size in front.
//!
//! Why, for CPU: a k6 response and request are some hundred small JavaScript
//! objects, strings and property arrays, made and freed once per request; with
//! glibc's `malloc` behind them (and QuickJS asking the size of every block it
//! makes and frees, for its accounting) that was a fifth of the instructions a
//! scripted request costs. A runtime is used by one thread at a time (its
//! worker's), so its lists need no lock and no atomic: a block freed is pushed
//! on its size's list and the next allocation of that size pops it, a few
//! instructions each.
//!
//! Why, for memory: a VU's context and its modules are a few thousand small
//! blocks, and `malloc` adds a header word to each and rounds it to 16 bytes.
//! Here a small block has no header and its size is a multiple of 8: its size
//! is its page's, read from the page's first word, found by masking the
//! block's address. That works because every page lies in one region of
//! address space reserved (not committed: untouched pages cost nothing) when
//! the first runtime is made, so an address inside the region is a small
//! block, and any other address one of `malloc`'s.
//!
//! A runtime keeps its pages while it lives, reusing freed blocks of each size:
//! what it holds is its peak of small blocks, not more. When it is dropped its
//! pages are given back to the system and go to the next runtime. Blocks larger
//! than [`MAX_SMALL`], and every block when the region could not be reserved (a
//! limit on address space) or is used up, come from `malloc` with a header word
//! recording their size.

use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use rquickjs::allocator::Allocator;

/// The header before a block from `malloc`: its usable size, in a word
/// (QuickJS's values need 8-byte alignment, which `malloc`'s 16 plus this word
/// keeps).
const HEADER: usize = std::mem::size_of::<usize>();
/// The size classes' step: a small request is rounded up to a multiple of it.
const STEP: usize = 8;
/// The largest small block; larger ones come from `malloc`.
const MAX_SMALL: usize = 1024;
/// How many size classes (one per multiple of [`STEP`] up to [`MAX_SMALL`]).
const CLASSES: usize = MAX_SMALL / STEP;
/// A page's size and alignment.
const PAGE: usize = 64 * 1024;
/// The bytes at a page's start before its first block: its blocks' size, in
/// the first word.
const PAGE_HEAD: usize = 16;
/// The address space reserved for pages: 16 GiB of small blocks, far more than
/// 10,000 VUs use; past it, blocks come from `malloc`.
const REGION: usize = 16 << 30;

/// Where [`BASE`] points while there is no region: the top [`REGION`] bytes of
/// the address space, which no user-space pointer reaches.
const NOWHERE: usize = usize::MAX - REGION + 1;
/// The region's first address ([`NOWHERE`] until it is reserved, and for good
/// when it cannot be): an address less than [`REGION`] past it is a small
/// block, any other one of `malloc`'s.
static BASE: AtomicUsize = AtomicUsize::new(NOWHERE);
/// The process's region of pages, reserved when the first runtime is made.
static SLABS: OnceLock<Option<Region>> = OnceLock::new();

/// Address space for pages: a cursor over pages never used, and the pages
/// runtimes gave back.
struct Region {
    /// The next page never handed out.
    next: AtomicUsize,
    /// The end of the region.
    end: usize,
    /// Pages given back by dropped runtimes (their memory released).
    returned: Mutex<Vec<usize>>,
}

impl Region {
    /// A region over `len` bytes of address space at `base` (PAGE-aligned).
    fn new(base: usize, len: usize) -> Self {
        Region {
            next: AtomicUsize::new(base),
            end: base + len,
            returned: Mutex::new(Vec::new()),
        }
    }

    /// A page for blocks of `size` bytes: one given back, else a new one;
    /// `None` when the region is used up.
    fn take(&self, size: usize) -> Option<usize> {
        let back = self
            .returned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        let page = match back {
            Some(p) => p,
            None => {
                let p = self.next.fetch_add(PAGE, Ordering::Relaxed);
                if p.checked_add(PAGE)? > self.end {
                    return None;
                }
                p
            }
        };
        // SAFETY: `page` is a PAGE-aligned page of the region, mapped read-write
        // and used by nobody else (taken from the cursor or the returned list
        // under its lock); its first word is its head.
        unsafe { (page as *mut usize).write(size) };
        Some(page)
    }

    /// Take back `pages` (no block of them in use any more), their memory
    /// released to the system.
    fn give_back(&self, pages: &[usize]) {
        for &p in pages {
            // SAFETY: a page of the region, no longer used by its runtime; after
            // MADV_DONTNEED it reads as zeroes and holds no memory until touched.
            unsafe { libc::madvise(p as *mut libc::c_void, PAGE, libc::MADV_DONTNEED) };
        }
        self.returned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(pages);
    }
}

/// The process's region, reserved on first use; `None` when the system refuses
/// the address space.
fn region() -> Option<&'static Region> {
    SLABS
        .get_or_init(|| {
            // SAFETY: a new private anonymous mapping, reserved without swap
            // (MAP_NORESERVE): pages cost memory only once written.
            let p = unsafe {
                libc::mmap(
                    ptr::null_mut(),
                    REGION + PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return None;
            }
            let base = (p as usize).next_multiple_of(PAGE);
            BASE.store(base, Ordering::Relaxed);
            Some(Region::new(base, REGION))
        })
        .as_ref()
}

/// Whether `p` is a small block (in the region of pages).
#[inline]
fn is_small(p: *mut u8) -> bool {
    // A block handed out was made after the region's base was stored, on this
    // thread or on one that handed the runtime over with a lock. One compare:
    // an address below the base wraps around to far more than REGION.
    (p as usize).wrapping_sub(BASE.load(Ordering::Relaxed)) < REGION
}

/// The size of the blocks of the page holding small block `p`.
///
/// # Safety
/// `p` is a small block of a live runtime's page.
#[inline]
unsafe fn page_size(p: *mut u8) -> usize {
    // SAFETY: the caller's promise: the page's head holds its blocks' size.
    unsafe { ((p as usize & !(PAGE - 1)) as *const usize).read() }
}

/// A worker runtime's allocator (see the module's words).
pub(crate) struct PoolAllocator {
    /// Each class's list of freed small blocks, linked through their first
    /// word; null when empty.
    free: [*mut u8; CLASSES],
    /// Each class's current page: the next block's address and the page's
    /// end (0 and 0 before its first page).
    bump: [(usize, usize); CLASSES],
    /// Where small blocks come from; `None` sends every block to `malloc`.
    region: Option<&'static Region>,
    /// The pages this runtime took, given back when it drops.
    pages: Vec<usize>,
}

impl PoolAllocator {
    /// An allocator on the process's region of pages.
    pub(crate) fn new() -> Self {
        Self::on(region())
    }

    fn on(region: Option<&'static Region>) -> Self {
        PoolAllocator {
            free: [ptr::null_mut(); CLASSES],
            bump: [(0, 0); CLASSES],
            region,
            pages: Vec::new(),
        }
    }

    /// A block from `malloc` with at least `size` bytes after its header; null
    /// when there is no memory.
    #[inline]
    fn large(size: usize) -> *mut u8 {
        let usable = size.max(1).next_multiple_of(HEADER);
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

    /// A small block of class `c` from its page, or from a new page; null when
    /// the region has none left.
    fn carve(&mut self, c: usize) -> *mut u8 {
        let size = (c + 1) * STEP;
        let (next, end) = self.bump[c];
        if next + size <= end {
            self.bump[c].0 = next + size;
            return next as *mut u8;
        }
        let Some(page) = self.region.and_then(|r| r.take(size)) else {
            return ptr::null_mut();
        };
        self.pages.push(page);
        let first = page + PAGE_HEAD;
        self.bump[c] = (first + size, page + PAGE);
        first as *mut u8
    }
}

impl Default for PoolAllocator {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every block returned holds at least the bytes asked for, at an
// address 8-aligned: a small block lies in a page of the region, at 16 + k ×
// its size (a multiple of 8) from the page's start, never past its end, and
// its page's head records that size; a block from `malloc` lies outside the
// region (the region is this module's own mapping) after a header recording
// its usable size. `usable_size` reads one or the other by the address. A block
// on a list is never handed out twice (it is popped before use) and a small
// block's memory stays mapped while its runtime lives (its pages are given
// back only when the allocator drops, after QuickJS has freed everything).
unsafe impl Allocator for PoolAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if size <= MAX_SMALL && self.region.is_some() {
            let c = size.max(1).div_ceil(STEP) - 1;
            let head = self.free[c];
            if !head.is_null() {
                // SAFETY: a block on list `c` is a freed small block of this
                // allocator, its first word the next block of the list.
                self.free[c] = unsafe { head.cast::<*mut u8>().read() };
                return head;
            }
            let p = self.carve(c);
            if !p.is_null() {
                return p;
            }
        }
        Self::large(size)
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
        if is_small(p) {
            // SAFETY: the caller's promise: `p` is this allocator's, live, so
            // its page's head holds its size.
            let c = unsafe { page_size(p) } / STEP - 1;
            // SAFETY: `p` has at least STEP bytes, no longer in use.
            unsafe { p.cast::<*mut u8>().write(self.free[c]) };
            self.free[c] = p;
            return;
        }
        // SAFETY: a block from `malloc`: the header's address is what malloc
        // returned.
        unsafe { libc::free(p.sub(HEADER).cast()) };
    }

    unsafe fn realloc(&mut self, p: *mut u8, new_size: usize) -> *mut u8 {
        if p.is_null() {
            return self.alloc(new_size);
        }
        let small = is_small(p);
        // SAFETY: the caller's promise: `p` came from this allocator.
        let old = unsafe { Self::usable_size(p) };
        if new_size <= old && (small || new_size > MAX_SMALL) {
            // It fits where it is (a small block is not shrunk: its class
            // stays; a large one keeps its bytes until it moves to a class).
            return p;
        }
        if !small && new_size > MAX_SMALL {
            let usable = new_size.next_multiple_of(HEADER);
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
        if is_small(p) {
            // SAFETY: the caller's promise: `p` is a live small block.
            return unsafe { page_size(p) };
        }
        // SAFETY: the caller's promise: `p` came from `malloc` here, after its
        // header.
        unsafe { p.sub(HEADER).cast::<usize>().read() }
    }
}

impl Drop for PoolAllocator {
    fn drop(&mut self) {
        // QuickJS has freed every block by now: the pages hold none in use.
        if let Some(r) = self.region {
            r.give_back(&self.pages);
        }
        self.pages.clear();
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
        let q = a.calloc(5, 8);
        assert_eq!(q, p, "the freed block is reused");
        // SAFETY: 40 bytes of `q`.
        assert!((0..40).all(|i| unsafe { q.add(i).read() } == 0));
        // A large block is never kept.
        let big = a.alloc(MAX_SMALL + 1);
        // SAFETY: both freed once.
        unsafe {
            a.dealloc(big);
            a.dealloc(q);
        }
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

    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }

    #[test]
    fn small_blocks_carry_no_header_and_sizes_share_no_page() {
        let mut a = PoolAllocator::new();
        assert!(a.region.is_some(), "the region could not be reserved here");
        // Fresh blocks of one class lie end to end in its page.
        let p = a.alloc(40);
        let q = a.alloc(37);
        assert!(is_small(p) && is_small(q));
        assert_eq!(q as usize - p as usize, 40);
        // SAFETY: a live block of this allocator.
        assert_eq!(unsafe { PoolAllocator::usable_size(q) }, 40);
        // Blocks of every class, made in turns, half freed in a scrambled
        // order and made again: each keeps its bytes (none overlaps another).
        let mut blocks: Vec<(*mut u8, usize, u8)> = Vec::new();
        for round in 0..40u8 {
            for size in (1..=MAX_SMALL).step_by(13) {
                let b = a.alloc(size);
                let seed = round.wrapping_mul(31).wrapping_add(size as u8);
                fill(b, size, seed);
                blocks.push((b, size, seed));
            }
        }
        // Scrambled by a fixed permutation: a stride prime to the count.
        let n = blocks.len();
        let stride = (1..n)
            .rev()
            .find(|k| gcd(*k, n) == 1 && *k < n / 2)
            .unwrap_or(1);
        let blocks_in_order = blocks.clone();
        for (i, b) in blocks.iter_mut().enumerate() {
            *b = blocks_in_order[(i * stride) % n];
        }
        let half = blocks.len() / 2;
        for &(b, _, _) in &blocks[..half] {
            // SAFETY: each freed once.
            unsafe { a.dealloc(b) };
        }
        for block in blocks.iter_mut().take(half) {
            let size = block.1;
            let b = a.alloc(size);
            fill(b, size, 7);
            *block = (b, size, 7);
        }
        for &(b, size, seed) in &blocks {
            assert!(
                holds(b, size, seed),
                "a block of {size} bytes was overwritten"
            );
        }
        // SAFETY: live blocks, each freed once.
        unsafe {
            for &(b, _, _) in &blocks {
                a.dealloc(b);
            }
            a.dealloc(p);
            a.dealloc(q);
        }
    }

    #[test]
    fn without_the_region_every_block_comes_from_malloc() {
        let mut a = PoolAllocator::on(None);
        for size in [1, 8, 40, 1024, 1025, 70_000] {
            let p = a.alloc(size);
            assert!(!p.is_null() && !is_small(p), "size {size}");
            // SAFETY: a live block of this allocator.
            let usable = unsafe { PoolAllocator::usable_size(p) };
            assert!(usable >= size && usable < size + HEADER, "{size}: {usable}");
            fill(p, size, 5);
            // SAFETY: live, then freed once.
            let p = unsafe { a.realloc(p, size * 2) };
            assert!(holds(p, size, 5));
            // SAFETY: freed once.
            unsafe { a.dealloc(p) };
        }
    }

    #[test]
    fn a_region_hands_out_its_pages_once_and_takes_them_back_emptied() {
        // A region of four pages of its own (not the process's).
        let len = 4 * PAGE;
        // SAFETY: a new private anonymous mapping, unmapped at the end.
        let m = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len + PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(m, libc::MAP_FAILED);
        let base = (m as usize).next_multiple_of(PAGE);
        let r = Region::new(base, len);
        let pages: Vec<usize> = (0..4).map(|_| r.take(24).expect("a page")).collect();
        assert_eq!(r.take(24), None, "used up");
        let mut sorted = pages.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 4);
        assert!(pages
            .iter()
            .all(|p| p % PAGE == 0 && *p >= base && *p < base + len));
        // SAFETY: the head of a page just taken.
        assert_eq!(unsafe { (pages[0] as *const usize).read() }, 24);
        fill((pages[1] + PAGE_HEAD) as *mut u8, 100, 3);
        r.give_back(&pages[1..2]);
        let again = r.take(48).expect("the page given back");
        assert_eq!(again, pages[1]);
        // SAFETY: the page's head, rewritten for its new size, and its bytes,
        // released and so zero.
        unsafe {
            assert_eq!((again as *const usize).read(), 48);
            assert!((0..100).all(|i| ((again + PAGE_HEAD + i) as *const u8).read() == 0));
            libc::munmap(m, len + PAGE);
        }
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

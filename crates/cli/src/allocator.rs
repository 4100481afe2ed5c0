//! The C allocator, tuned once at start: glibc gets at most two malloc arenas.
//!
//! By default glibc gives threads that allocate at the same time arenas of their own,
//! up to eight per core. pado's workers hand every second's figures to the aggregator
//! thread, which frees them, and memory freed across many arenas is given back to the
//! system unevenly: in a one-hour soak (`bench/soak.sh`) pado's resident memory crept
//! 11% above its value at minute 2 with the default arenas, while its live heap stayed
//! flat (heaptrack: 9.6 MiB at its peak over 3 minutes, 9.2 MiB over 9); with two
//! arenas it stayed flat. The workers' small allocations are still served by glibc's
//! per-thread caches without taking an arena's lock. `MALLOC_ARENA_MAX` in the
//! environment, when set, is left to decide.

/// Apply the tuning; call first thing, before any thread starts.
pub(crate) fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a parameter of glibc's allocator; called before
        // pado starts any thread, and it returns 0 (ignored) if glibc refuses it.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

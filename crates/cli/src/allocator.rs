//! The C allocator, tuned once at start: glibc gets one malloc arena per core pado may
//! use (at least two), not its default of eight per core.
//!
//! By default glibc gives threads that allocate at the same time arenas of their own,
//! up to eight per core. pado's workers hand every second's figures to the aggregator
//! thread, which frees them, and memory freed across many arenas is given back to the
//! system unevenly: in a one-hour soak (`bench/soak.sh`) pado's resident memory crept
//! 11% above its value at minute 2 with the default arenas, while its live heap stayed
//! flat (heaptrack: 9.6 MiB at its peak over 3 minutes, 9.2 MiB over 9); with two
//! arenas, one per core of that machine, it stayed flat. One per core lets every worker
//! thread keep an arena of its own, so none waits for another's lock, and its small
//! allocations are served by glibc's per-thread caches anyway. `MALLOC_ARENA_MAX` in
//! the environment, when set, is left to decide.

/// Apply the tuning; call first thing, before any thread starts.
pub(crate) fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a parameter of glibc's allocator; called before
        // pado starts any thread, and it returns 0 (ignored) if glibc refuses it.
        let arenas = pado_engine::allowed_cores().clamp(2, 1024) as libc::c_int;
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

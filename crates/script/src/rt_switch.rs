//! What a VU's coroutine takes with it when it suspends, and brings back when
//! it is resumed, so that many VUs can share one QuickJS runtime
//! ([`crate::worker_rt`]).
//!
//! QuickJS keeps two things in its runtime that belong to the JavaScript running
//! *now*: the chain of call frames (read for every error's stack, for strict
//! mode, for `import`'s base) and the queue of promise jobs. A VU suspends in
//! the middle of a call (`http.get`), so when it suspends both leave with it
//! ([`suspend`]) and the runtime is left as if no JavaScript were running; when
//! it is resumed they come back, and QuickJS's stack check is pointed at the
//! VU's own stack ([`set_stack`]). Without this one VU's error stack would run
//! through another VU's frames (or a finished VU's freed ones), and one VU's
//! promise jobs would run on another VU's coroutine.
//!
//! QuickJS has no call for either field, so where they sit in its runtime is
//! found once per process and verified ([`layout_from`]): each place is checked
//! against what QuickJS must hold there, including a live call and a live job.
//! Where the check fails (another build of QuickJS), [`layout_from`] says so and
//! each VU gets a runtime of its own, as pado did before: more memory, the same
//! behaviour.

use std::cell::Cell;
use std::sync::OnceLock;

use pado_engine::script::{ScriptCall, ScriptReply};
use rquickjs::{qjs, Ctx};

use crate::natives::{self, VuYielder};

/// Bytes of a coroutine's stack kept below QuickJS's limit for the Rust and C
/// frames above JavaScript's deepest call (natives, the regexp engine, the
/// coroutine switch): deep recursion is a JavaScript `RangeError`, never a
/// fault.
pub(crate) const NATIVE_ROOM: usize = 96 * 1024;

thread_local! {
    /// The lowest usable address of the stack of the coroutine running on this
    /// thread (0 outside one).
    static STACK_LO: Cell<usize> = const { Cell::new(0) };
    /// The frame's place while [`probe`]'s native runs, and whether that native
    /// found its own frame there.
    static PROBE: Cell<(usize, bool)> = const { Cell::new((0, false)) };
}

/// Where QuickJS's runtime keeps the current frame chain and the job queue
/// (byte offsets into its `JSRuntime`), as verified by [`probe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    frame: usize,
    jobs: usize,
}

static LAYOUT: OnceLock<Option<Layout>> = OnceLock::new();

/// The runtime's layout, probed on `rt` the first time (a runtime with no
/// JavaScript running and no job pending): `None` when it cannot be verified,
/// and then runtimes must not be shared.
pub(crate) fn layout_from(rt: *mut qjs::JSRuntime) -> Option<Layout> {
    // SAFETY: `rt` is a live runtime of this thread, idle (see above).
    *LAYOUT.get_or_init(|| unsafe { probe(rt) })
}

/// Say that the coroutine whose stack starts at `lo` (its lowest usable
/// address) runs on this thread now; 0 when none does.
pub(crate) fn set_stack_lo(lo: usize) {
    STACK_LO.with(|c| c.set(lo));
}

/// Point QuickJS's stack check at the running coroutine's stack: JavaScript may
/// go down to [`NATIVE_ROOM`] above its lowest address. Outside a coroutine it
/// leaves the runtime as it is.
pub(crate) fn set_stack(rt: *mut qjs::JSRuntime) {
    let lo = STACK_LO.with(Cell::get);
    if lo == 0 {
        return;
    }
    let here = std::hint::black_box(0u8);
    let sp = std::ptr::addr_of!(here) as usize;
    // SAFETY: a live runtime of this thread; both calls only set numbers.
    unsafe {
        qjs::JS_UpdateStackTop(rt);
        // Never 0 (which QuickJS reads as "no limit").
        qjs::JS_SetMaxStackSize(rt, sp.saturating_sub(lo + NATIVE_ROOM).max(1) as _);
    }
}

/// Suspend the running VU's coroutine with `call` (from inside `ctx`, on the
/// coroutine's stack): the runtime's frame chain and pending jobs leave with
/// it, and come back, with its stack's limit, when it is resumed.
pub(crate) fn suspend(ctx: &Ctx<'_>, y: &VuYielder, call: ScriptCall) -> ScriptReply {
    // SAFETY: `ctx` is live, so is its runtime.
    let rt = unsafe { qjs::JS_GetRuntime(ctx.as_raw().as_ptr()) };
    let lo = STACK_LO.with(Cell::get);
    let layout = LAYOUT.get().copied().flatten();
    // The jobs' list head lives in this frame, which stays put while the
    // coroutine is suspended in it.
    let mut jobs = ListHead {
        prev: std::ptr::null_mut(),
        next: std::ptr::null_mut(),
    };
    let stash: *mut ListHead = &mut jobs;
    // SAFETY: the layout was verified on this build's runtime; only this thread
    // touches `rt`, and no JavaScript of it runs until the coroutine is back.
    let frame = layout.map(|l| unsafe { park(rt, l, stash) });
    let reply = y.suspend(call);
    set_stack_lo(lo);
    if let (Some(l), Some(f)) = (layout, frame) {
        // SAFETY: as above; every coroutine that ran meanwhile parked its own.
        unsafe { unpark(rt, l, f, stash) };
    }
    set_stack(rt);
    natives::set_current(y);
    reply
}

/// Run `f` (a native's work that must settle promises of its own, such as
/// loading a module) with the runtime's pending jobs set aside: only the jobs
/// `f` queues run in it, and the VU's own come back first in line after it,
/// so the script's microtasks keep their order.
pub(crate) fn with_own_jobs<R>(ctx: &Ctx<'_>, f: impl FnOnce() -> R) -> R {
    let Some(l) = LAYOUT.get().copied().flatten() else {
        return f();
    };
    // SAFETY: as `ctx`'s.
    let rt = unsafe { qjs::JS_GetRuntime(ctx.as_raw().as_ptr()) };
    let mut before = ListHead {
        prev: std::ptr::null_mut(),
        next: std::ptr::null_mut(),
    };
    let mut after = ListHead {
        prev: std::ptr::null_mut(),
        next: std::ptr::null_mut(),
    };
    let (before_at, after_at): (*mut ListHead, *mut ListHead) = (&mut before, &mut after);
    // SAFETY: the verified layout; both heads live in this frame until put
    // back; only this thread touches the runtime.
    unsafe { take_jobs(rt, l, before_at) };
    let out = f();
    // SAFETY: as above.
    unsafe {
        take_jobs(rt, l, after_at);
        give_jobs(rt, l, before_at);
        give_jobs(rt, l, after_at);
    }
    out
}

/// A list head as QuickJS's `list.h` lays it out: `prev`, then `next`.
#[repr(C)]
struct ListHead {
    prev: *mut ListHead,
    next: *mut ListHead,
}

/// Take the runtime's frame chain (returned) and its pending jobs (into
/// `stash`), leaving it with none of either.
///
/// # Safety
/// `rt` is a live, idle runtime of this thread laid out as `l`; `stash` stays
/// put until [`unpark`].
unsafe fn park(rt: *mut qjs::JSRuntime, l: Layout, stash: *mut ListHead) -> usize {
    // SAFETY: the field `l` verified; the jobs as `take_jobs` says.
    unsafe {
        let slot = rt.cast::<u8>().add(l.frame).cast::<usize>();
        let frame = slot.read();
        slot.write(0);
        take_jobs(rt, l, stash);
        frame
    }
}

/// Move the runtime's pending jobs into `stash`, leaving it none.
///
/// # Safety
/// As [`park`]'s.
unsafe fn take_jobs(rt: *mut qjs::JSRuntime, l: Layout, stash: *mut ListHead) {
    // SAFETY: the list `l` verified, and its own links.
    unsafe {
        let head = rt.cast::<u8>().add(l.jobs).cast::<ListHead>();
        if (*head).next == head {
            (*stash).prev = stash;
            (*stash).next = stash;
        } else {
            (*stash).prev = (*head).prev;
            (*stash).next = (*head).next;
            (*(*stash).next).prev = stash;
            (*(*stash).prev).next = stash;
            (*head).prev = head;
            (*head).next = head;
        }
    }
}

/// Give the runtime back `frame` and the jobs in `stash` (after any it has now).
///
/// # Safety
/// As [`park`], with the `stash` it filled.
unsafe fn unpark(rt: *mut qjs::JSRuntime, l: Layout, frame: usize, stash: *mut ListHead) {
    // SAFETY: the field `l` verified; the jobs as `give_jobs` says.
    unsafe {
        rt.cast::<u8>().add(l.frame).cast::<usize>().write(frame);
        give_jobs(rt, l, stash);
    }
}

/// Append the jobs in `stash` to the runtime's, leaving `stash` empty.
///
/// # Safety
/// As [`park`]'s, with a `stash` [`take_jobs`] filled.
unsafe fn give_jobs(rt: *mut qjs::JSRuntime, l: Layout, stash: *mut ListHead) {
    // SAFETY: the list `l` verified, and the lists' own links.
    unsafe {
        if (*stash).next == stash {
            return;
        }
        let head = rt.cast::<u8>().add(l.jobs).cast::<ListHead>();
        let (first, last, tail) = ((*stash).next, (*stash).prev, (*head).prev);
        (*tail).next = first;
        (*first).prev = tail;
        (*last).next = head;
        (*head).prev = last;
        (*stash).prev = stash;
        (*stash).next = stash;
    }
}

/// A stack size no runtime is otherwise given, to find where the stack's
/// fields are. Small: QuickJS's limit is the stack's top less this size, and
/// a size larger than the top's address wraps the limit round to the top of
/// the address space, where every call is a stack overflow and the check of a
/// live call fails. Valgrind runs a program's stacks below 128 MiB, so with a
/// size of 182 MB no runtime was shared under callgrind (each VU made its own,
/// and the `instr` figures were of that). Odd, so never a sum of QuickJS's
/// allocation sizes (which are even) nor an address.
const PROBE_SIZE: usize = 0x5_a7d1;
/// Words of the runtime searched for them (they sit in its first 30 or so; the
/// fields read after them stay inside the struct).
const SCAN_WORDS: usize = 36;

/// Find and verify the layout on `rt` (idle, fresh).
///
/// # Safety
/// `rt` is a live runtime of this thread, with no JavaScript running and no job
/// pending.
#[cfg(target_pointer_width = "64")]
unsafe fn probe(rt: *mut qjs::JSRuntime) -> Option<Layout> {
    // SAFETY: reads inside the runtime's struct (see `SCAN_WORDS`).
    let word = |off: usize| -> usize { unsafe { rt.cast::<u8>().add(off).cast::<usize>().read() } };
    let here = std::hint::black_box(0u8);
    let sp = std::ptr::addr_of!(here) as usize;
    // SAFETY: a live runtime; both calls only set numbers.
    unsafe {
        qjs::JS_UpdateStackTop(rt);
        qjs::JS_SetMaxStackSize(rt, PROBE_SIZE as _);
    }
    // `stack_size`, `stack_top` (about here), `stack_limit` in a row.
    let mut found = (0..SCAN_WORDS).map(|i| i * 8).filter(|&o| {
        let (size, top, limit) = (word(o), word(o + 8), word(o + 16));
        size == PROBE_SIZE && top.abs_diff(sp) < 64 * 1024 && limit == top.wrapping_sub(size)
    });
    let size_at = found.next()?;
    if found.next().is_some() {
        return None;
    }
    // Then the pending exception (a 16-byte value, "uninitialized" when there
    // is none), three flags padded to a word, the current frame (none now);
    // four pointers on, the job list (empty: both links point at itself).
    let frame = size_at + 48;
    let jobs = size_at + 88;
    let head = rt as usize + jobs;
    let quiet = word(size_at + 32) as i64 == i64::from(qjs::JS_TAG_UNINITIALIZED)
        && word(frame) == 0
        && word(jobs) == head
        && word(jobs + 8) == head;
    let l = Layout { frame, jobs };
    // SAFETY: as this function's.
    (quiet && unsafe { live_check(rt, l) }).then_some(l)
}

/// No runtime of another pointer width is shared.
///
/// # Safety
/// None needed.
#[cfg(not(target_pointer_width = "64"))]
unsafe fn probe(_rt: *mut qjs::JSRuntime) -> Option<Layout> {
    None
}

/// A call shows its frame at `l.frame` (its arguments where the frame says),
/// gone after it returns; a queued job shows in the list at `l.jobs`, gone
/// once run.
///
/// # Safety
/// As [`probe`]'s, with `l` inside the runtime's struct.
unsafe fn live_check(rt: *mut qjs::JSRuntime, l: Layout) -> bool {
    // SAFETY: reads inside the runtime's struct.
    let word = |off: usize| -> usize { unsafe { rt.cast::<u8>().add(off).cast::<usize>().read() } };
    // SAFETY: QuickJS's own calls on a live runtime, each value freed once.
    unsafe {
        let ctx = qjs::JS_NewContextRaw(rt);
        if ctx.is_null() {
            return false;
        }
        qjs::JS_AddIntrinsicBaseObjects(ctx);
        PROBE.with(|p| p.set((l.frame, false)));
        let f = qjs::JS_NewCFunction2(
            ctx,
            Some(probe_native),
            c"probe".as_ptr(),
            0,
            qjs::JSCFunctionEnum_JS_CFUNC_generic,
            0,
        );
        let mut args = [qjs::JS_UNDEFINED];
        let r = qjs::JS_Call(ctx, f, qjs::JS_UNDEFINED, 1, args.as_mut_ptr());
        let called = !qjs::JS_IsException(r);
        if !called {
            qjs::JS_FreeValue(ctx, qjs::JS_GetException(ctx));
        }
        qjs::JS_FreeValue(ctx, r);
        qjs::JS_FreeValue(ctx, f);
        let framed = called && PROBE.with(Cell::get).1 && word(l.frame) == 0;
        let head = rt as usize + l.jobs;
        let queued = qjs::JS_EnqueueJob(ctx, Some(probe_job), 0, std::ptr::null_mut()) == 0
            && word(l.jobs + 8) != head;
        let mut job_ctx = std::ptr::null_mut();
        let ran = queued
            && qjs::JS_ExecutePendingJob(rt, &mut job_ctx) == 1
            && word(l.jobs) == head
            && word(l.jobs + 8) == head;
        qjs::JS_FreeContext(ctx);
        framed && ran
    }
}

/// The probe's native: is the runtime's current frame its own (on the stack
/// just above it, with this call's arguments)?
unsafe extern "C" fn probe_native(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    _argc: std::os::raw::c_int,
    argv: *mut qjs::JSValue,
) -> qjs::JSValue {
    let (at, _) = PROBE.with(Cell::get);
    let here = std::hint::black_box(0u8);
    let sp = std::ptr::addr_of!(here) as usize;
    // SAFETY: `at` is inside the runtime's struct; the frame is read only once
    // it is known to lie on this thread's stack just above this call.
    let mine = unsafe {
        let rt = qjs::JS_GetRuntime(ctx);
        let frame = rt.cast::<u8>().add(at).cast::<usize>().read();
        // A frame: the previous one, the function (a 16-byte value), the
        // arguments.
        frame > sp
            && frame - sp < 64 * 1024
            && (frame as *const usize).add(3).read() == argv as usize
    };
    PROBE.with(|p| p.set((at, mine)));
    qjs::JS_UNDEFINED
}

/// The probe's job: nothing.
unsafe extern "C" fn probe_job(
    _ctx: *mut qjs::JSContext,
    _argc: std::os::raw::c_int,
    _argv: *mut qjs::JSValue,
) -> qjs::JSValue {
    qjs::JS_UNDEFINED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn the_runtimes_layout_is_found_and_verified_on_this_build() {
        let rt = rquickjs::Runtime::new().unwrap();
        let context = rquickjs::Context::full(&rt).unwrap();
        let raw = crate::worker_rt::raw_runtime(&context);
        let l = layout_from(raw).expect("runtimes are shared on this build");
        // The jobs' list sits after the frame, as QuickJS-ng 0.8 declares them.
        assert_eq!(l.jobs - l.frame, 40);
    }

    #[test]
    fn the_probes_stack_limit_does_not_wrap_for_a_stack_low_in_memory() {
        // Where valgrind put a coroutine's stack (80 MB), and lower still: the
        // limit the probe sets stays a real address below the stack's top.
        for top in [0x4d2_8c9f_usize, 0x100_0000, 0x10_0000] {
            let limit = top.checked_sub(PROBE_SIZE);
            assert!(limit.is_some_and(|l| l > 0), "top {top:#x}");
        }
        assert_eq!(PROBE_SIZE % 2, 1, "odd: never a sum of even sizes");
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn parking_takes_the_frame_and_the_jobs_and_unparking_gives_them_back() {
        let rt = rquickjs::Runtime::new().unwrap();
        let context = rquickjs::Context::full(&rt).unwrap();
        let raw = crate::worker_rt::raw_runtime(&context);
        let l = layout_from(raw).expect("runtimes are shared on this build");
        context.with(|ctx| {
            let _: rquickjs::Value = ctx
                .eval("globalThis.order = []; Promise.resolve().then(() => order.push('a')); Promise.resolve().then(() => order.push('b'));")
                .unwrap();
            let mut stash = ListHead {
                prev: std::ptr::null_mut(),
                next: std::ptr::null_mut(),
            };
            // SAFETY: the verified layout; nothing runs while parked.
            let frame = unsafe { park(raw, l, &mut stash) };
            assert_eq!(frame, 0, "no JavaScript runs here");
            assert!(!ctx.execute_pending_job(), "the jobs left with the park");
            // A job queued meanwhile runs before the parked ones come back after it.
            let _: rquickjs::Value = ctx
                .eval("Promise.resolve().then(() => order.push('c'));")
                .unwrap();
            // SAFETY: as above.
            unsafe { unpark(raw, l, frame, &mut stash) };
            while ctx.execute_pending_job() {}
            let order: Vec<String> = ctx.eval("order").unwrap();
            assert_eq!(order, ["c", "a", "b"]);
        });
    }
}

//! One QuickJS runtime per worker thread, holding a context per VU.
//!
//! A runtime holds what does not belong to one VU: atoms (every property name
//! and string constant), shapes, the class table, the garbage collector, the
//! loader. Each VU keeps a context of its own (its globals, its instances of the
//! script's modules, `__VU`), so what one VU sets is never seen by another,
//! while what they can share is held once per thread instead of once per VU.
//! QuickJS runs one thing at a time per runtime, which fits pado's engine: a VU
//! lives on one worker thread for its whole life, and only its coroutine
//! touches the runtime, one coroutine at a time ([`crate::rt_switch`] hands the
//! runtime's per-call state over at each switch).
//!
//! The runtime lives as long as one of its contexts does (each holds it); the
//! thread remembers it weakly, for the script it loads, so the next VU made on
//! the thread joins it.

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use rquickjs::runtime::WeakRuntime;
use rquickjs::{qjs, Context, Runtime};

use crate::host::{BytecodeLoader, ScriptResolver, Shared};
use crate::rt_switch;

thread_local! {
    /// This thread's runtime, and the script it loads modules of.
    static RUNTIME: RefCell<Option<(Weak<Shared>, WeakRuntime)>> = const { RefCell::new(None) };
    /// Runtimes made on this thread (what tests read).
    static MADE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Promise jobs a VU's context may leave that are run when it ends, at most.
const LEFTOVER_JOBS: usize = 10_000;

/// A VU's context, in the runtime of this thread for `shared`'s script (made
/// now when there is none, or when runtimes cannot be shared: see
/// [`rt_switch::layout_from`]); QuickJS's stack check is pointed at the running
/// coroutine's stack.
pub(crate) fn vu_context(shared: &Arc<Shared>) -> rquickjs::Result<(Runtime, Context)> {
    let kept = RUNTIME.with(|r| {
        r.borrow()
            .as_ref()
            .filter(|(s, _)| std::ptr::eq(s.as_ptr(), Arc::as_ptr(shared)))
            .and_then(|(_, rt)| rt.try_ref())
    });
    let (rt, fresh) = match kept {
        Some(rt) => (rt, false),
        None => {
            let rt = Runtime::new_with_alloc(crate::js_alloc::PoolAllocator::new())?;
            rt.set_loader(ScriptResolver, BytecodeLoader(shared.clone()));
            MADE.with(|m| m.set(m.get() + 1));
            (rt, true)
        }
    };
    let context = crate::lazy_builtins::vu_context(&rt)?;
    let raw = raw_runtime(&context);
    if fresh && rt_switch::layout_from(raw).is_some() {
        RUNTIME.with(|r| *r.borrow_mut() = Some((Arc::downgrade(shared), rt.weak())));
    }
    rt_switch::set_stack(raw);
    Ok((rt, context))
}

/// The QuickJS runtime under `context`.
pub(crate) fn raw_runtime(context: &Context) -> *mut qjs::JSRuntime {
    // SAFETY: a live context.
    unsafe { qjs::JS_GetRuntime(context.as_raw().as_ptr()) }
}

/// Run the promise jobs a VU's context left (at most [`LEFTOVER_JOBS`]) before
/// it goes, so that none is left for another VU of the runtime to run; called
/// on the VU's coroutine with no VU current (a job's request is refused).
pub(crate) fn run_leftover_jobs(context: &Context) {
    let rt = raw_runtime(context);
    for _ in 0..LEFTOVER_JOBS {
        let mut job_ctx = std::ptr::null_mut();
        // SAFETY: a live runtime of this thread; a job that threw leaves its
        // exception in its context, taken and freed here.
        match unsafe { qjs::JS_ExecutePendingJob(rt, &mut job_ctx) } {
            0 => return,
            r if r < 0 && !job_ctx.is_null() => unsafe {
                qjs::JS_FreeValue(job_ctx, qjs::JS_GetException(job_ctx));
            },
            _ => {}
        }
    }
}

/// How many runtimes were made on this thread: one per script while runtimes
/// are shared, one per VU when they cannot be.
#[cfg(test)]
pub(crate) fn runtimes_made() -> u64 {
    MADE.with(std::cell::Cell::get)
}

/// This thread's shared runtime, if one lives (what tests measure).
#[cfg(test)]
pub(crate) fn this_threads_runtime() -> Option<Runtime> {
    RUNTIME.with(|r| r.borrow().as_ref().and_then(|(_, rt)| rt.try_ref()))
}

//! A scripted VU: a QuickJS context of its own, in its worker thread's runtime
//! ([`crate::worker_rt`]), living on a stackful coroutine (`corosensei`). The
//! VU's task on a pado worker resumes it; when the script calls `http.get` or
//! `sleep` the coroutine suspends with the request ([`ScriptCall`]) and the
//! worker runs other VUs until the answer comes back; the runtime's per-call
//! state goes and comes back with it ([`crate::rt_switch`]), and QuickJS's
//! stack-overflow check is pointed at the coroutine's own stack.
//!
//! The stack: its size is address space, only the pages a VU touches are
//! resident. The init stage (compiling the context, evaluating the modules)
//! goes deeper than an iteration, so once the first iteration is over the
//! pages below the VU's frame are handed back to the kernel
//! ([`release_unused_stack`]); what stays resident is what an iteration
//! touches.

use std::collections::VecDeque;
use std::sync::Arc;

use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult};
use pado_engine::script::{ScriptCall, ScriptFault, ScriptReply, ScriptRole, ScriptVu};
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Module, Object, Runtime, Value,
};

use crate::error::ScriptError;
use crate::host::{init_error, BytecodeLoader, ScriptResolver, Shared};
use crate::natives::{self, VuYielder};
use crate::{rt_switch, worker_rt};

/// Each VU's coroutine stack: address space; only the pages it touches are
/// resident. JavaScript may use all of it but [`rt_switch::NATIVE_ROOM`];
/// debug builds (unoptimised C and Rust frames) need more.
#[cfg(debug_assertions)]
const STACK: usize = 1024 * 1024;
#[cfg(not(debug_assertions))]
const STACK: usize = 256 * 1024;

/// A VU's coroutine.
type Co = Coroutine<ScriptReply, ScriptCall, (), DefaultStack>;

/// A scripted VU ([`ScriptVu`]): its coroutine, whether it is inside an
/// iteration (suspended in a call, not between iterations), and what it
/// gave since it last suspended that the engine has yet to get: the checks
/// and metric adds it made on the way ([`natives::record`]), then the call it
/// suspended with.
pub(crate) struct CoVu {
    co: Option<Co>,
    mid: bool,
    held: VecDeque<ScriptCall>,
}

impl CoVu {
    /// A VU for `role`; its runtime is made on its first resume.
    pub(crate) fn start(shared: Arc<Shared>, role: ScriptRole) -> Result<CoVu, String> {
        let stack = DefaultStack::new(STACK).map_err(|e| format!("a VU's stack: {e}"))?;
        // The lowest usable address: above the guard page.
        let lo = stack.limit().get() + page_size();
        let co = Coroutine::with_stack(stack, move |y: &VuYielder, first: ScriptReply| {
            natives::set_current(y);
            rt_switch::set_stack_lo(lo);
            run(y, &shared, &role, first, lo);
        });
        Ok(CoVu {
            co: Some(co),
            mid: false,
            held: VecDeque::new(),
        })
    }

    /// End the iteration in progress (every call answered with a stop) so the
    /// coroutine is back between iterations; `false` when it does not end.
    fn drain(&mut self) -> bool {
        for _ in 0..1000 {
            if !self.mid {
                return true;
            }
            let _ = self.step(ScriptReply::Stop);
        }
        !self.mid
    }

    fn step(&mut self, reply: ScriptReply) -> ScriptCall {
        if let Some(next) = self.held.pop_front() {
            // `reply` answered a check or an add the script is already past.
            return self.hand_over(next);
        }
        let Some(co) = self.co.as_mut().filter(|c| !c.done()) else {
            self.mid = false;
            return ScriptCall::Done(Err(fault("the VU ended")));
        };
        let out = co.resume(reply);
        natives::set_current(std::ptr::null());
        rt_switch::set_stack_lo(0);
        let call = match out {
            CoroutineResult::Yield(call) => call,
            CoroutineResult::Return(()) => ScriptCall::Done(Err(fault("the VU ended"))),
        };
        natives::take_records(&mut self.held);
        if self.held.is_empty() {
            return self.hand_over(call);
        }
        self.held.push_back(call);
        let first = self.held.pop_front().expect("a record");
        self.hand_over(first)
    }

    /// Give the engine `call`, the next of what the coroutine gave: the VU
    /// is mid-iteration until the iteration's end has been given.
    fn hand_over(&mut self, call: ScriptCall) -> ScriptCall {
        self.mid = !self.held.is_empty() || !matches!(call, ScriptCall::Done(_));
        call
    }
}

impl ScriptVu for CoVu {
    fn resume(&mut self, reply: ScriptReply) -> ScriptCall {
        if matches!(reply, ScriptReply::Start { .. }) && self.mid && !self.drain() {
            return ScriptCall::Done(Err(fault("the VU's last iteration never ended")));
        }
        self.step(reply)
    }
}

impl Drop for CoVu {
    fn drop(&mut self) {
        // End it the way it runs (its runtime freed on its own stack), never by
        // unwinding through QuickJS's C frames.
        if self.drain() {
            if let Some(co) = self.co.as_mut().filter(|c| c.started() && !c.done()) {
                let _ = co.resume(ScriptReply::Stop);
                natives::set_current(std::ptr::null());
                rt_switch::set_stack_lo(0);
                // What it recorded on its way out goes with it, not to the
                // next VU resumed on this thread.
                natives::take_records(&mut self.held);
                self.held.clear();
            }
        }
        if let Some(co) = self.co.take() {
            if co.started() && !co.done() {
                // Still inside the script (it caught every stop): leak it (and
                // with it its context and the runtime it holds) rather than
                // unwind across C frames.
                std::mem::forget(co);
            }
        }
    }
}

fn fault(message: &str) -> ScriptFault {
    ScriptFault {
        message: message.to_string(),
        stack: String::new(),
    }
}

/// The coroutine's body: make the VU's context, load the script, then answer
/// each start until told to stop. `lo` is the lowest usable address of the
/// coroutine's stack.
fn run(y: &VuYielder, shared: &Arc<Shared>, role: &ScriptRole, first: ScriptReply, lo: usize) {
    let (rt, context) = match worker_rt::vu_context(shared) {
        Ok(v) => v,
        Err(e) => {
            refuse_all(
                y,
                first,
                &fault(&format!("a VU's JavaScript context: {e}")),
                None,
            );
            return;
        }
    };
    let (scenario, exec, vu) = match role {
        ScriptRole::Setup => ("setup", "setup", 0),
        ScriptRole::Teardown => ("teardown", "teardown", 0),
        ScriptRole::Load { scenario, exec, vu } => (scenario.as_str(), exec.as_str(), *vu),
    };
    with_ctx(&context, |ctx| {
        let f = match init(&ctx, shared, scenario, vu, exec) {
            Ok(f) => f,
            Err(e) => {
                refuse_all(y, first, &e, Some(&ctx));
                return;
            }
        };
        let mut reply = first;
        let mut data_seen: Option<(Arc<str>, Value<'_>)> = None;
        let mut released = false;
        loop {
            let ScriptReply::Start { iter, data, ids } = reply else {
                if matches!(reply, ScriptReply::Stop) {
                    return;
                }
                reply = rt_switch::suspend(
                    &ctx,
                    y,
                    ScriptCall::Done(Err(fault("resumed out of turn"))),
                );
                continue;
            };
            let g = ctx.globals();
            let _ = g.set("__ITER", iter);
            let _ = g.set("__pado_iter_instance", ids.in_instance as f64);
            let _ = g.set("__pado_iter_test", ids.in_test as f64);
            // k6 starts each iteration with an empty VU jar (`noCookiesReset` aside).
            if let Ok(reset) = g.get::<_, Function<'_>>("__pado_jar_reset") {
                let _ = reset.call::<_, ()>(());
            }
            let arg = match (&data, &data_seen) {
                (Some(d), Some((seen, v))) if Arc::ptr_eq(d, seen) => v.clone(),
                (Some(d), _) => match ctx.json_parse(d.as_bytes().to_vec()) {
                    Ok(v) => {
                        data_seen = Some((d.clone(), v.clone()));
                        v
                    }
                    Err(_) => Value::new_undefined(ctx.clone()),
                },
                (None, _) => Value::new_undefined(ctx.clone()),
            };
            let out = call(&ctx, &f, arg, matches!(role, ScriptRole::Setup));
            if !released {
                released = true;
                release_unused_stack(lo);
            }
            reply = rt_switch::suspend(&ctx, y, ScriptCall::Done(out));
        }
    });
    natives::set_current(std::ptr::null());
    worker_rt::run_leftover_jobs(&context);
    drop(context);
    drop(rt);
}

/// Run `f` in `context` without taking the runtime's lock as
/// `Context::with` does: each VU suspends inside its context, and a lock held
/// across the suspension would bar every other VU of the runtime.
fn with_ctx<R>(context: &Context, f: impl for<'js> FnOnce(Ctx<'js>) -> R) -> R {
    // SAFETY: the runtime is touched only from this thread, by one coroutine at
    // a time (see `worker_rt`), and `f` cannot keep the `Ctx` or any value of
    // it past this call (its lifetime is `f`'s own).
    let ctx = unsafe { Ctx::from_raw(context.as_raw()) };
    f(ctx)
}

/// Hand back to the kernel the pages of the coroutine's stack below this
/// frame (down to `lo`, its lowest usable address): touched by the init stage,
/// not needed again unless an iteration goes as deep (then they come back,
/// zeroed, as any untouched page would).
#[inline(never)]
fn release_unused_stack(lo: usize) {
    let here = std::hint::black_box(0u8);
    let sp = std::ptr::addr_of!(here) as usize;
    let page = page_size();
    // Room below this frame for the calls it makes now.
    let end = sp.saturating_sub(16 * 1024) & !(page - 1);
    if end > lo {
        // SAFETY: `lo..end` is part of this coroutine's own stack, below every
        // live frame of it (the red zone included); the mapping is private and
        // anonymous, so its pages read as zeros when touched again.
        unsafe {
            libc::madvise(lo as *mut libc::c_void, end - lo, libc::MADV_DONTNEED);
        }
    }
}

/// The machine's page size.
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// A VU that cannot start answers every iteration with why, until stopped
/// (from inside its context `ctx` when it has one).
fn refuse_all(y: &VuYielder, first: ScriptReply, why: &ScriptFault, ctx: Option<&Ctx<'_>>) {
    let mut reply = first;
    while !matches!(reply, ScriptReply::Stop) {
        let call = ScriptCall::Done(Err(why.clone()));
        reply = match ctx {
            Some(ctx) => rt_switch::suspend(ctx, y, call),
            None => {
                let r = y.suspend(call);
                natives::set_current(y);
                r
            }
        };
    }
}

/// Install the natives and globals, evaluate the script (its init stage) and
/// find the function `exec`.
pub(crate) fn init<'js>(
    ctx: &Ctx<'js>,
    shared: &Arc<Shared>,
    scenario: &str,
    vu: u64,
    exec: &str,
) -> Result<Function<'js>, ScriptFault> {
    let caught = |e: CaughtError<'js>| fault_of(e);
    natives::install(ctx, shared, scenario)
        .catch(ctx)
        .map_err(caught)?;
    let g = ctx.globals();
    let env = shared.env_object(ctx).catch(ctx).map_err(caught)?;
    g.set("__ENV", env).catch(ctx).map_err(caught)?;
    g.set("__VU", vu).catch(ctx).map_err(caught)?;
    g.set("__ITER", 0).catch(ctx).map_err(caught)?;
    if let Some(o) = shared.options_json.get() {
        let o = ctx
            .json_parse(o.as_bytes().to_vec())
            .catch(ctx)
            .map_err(caught)?;
        g.set("__pado_options", o).catch(ctx).map_err(caught)?;
    }
    crate::host::run_prelude(ctx, shared).map_err(caught)?;
    let ns = evaluate(ctx, shared).map_err(caught)?;
    // The init stage is over: `open()`, `fs.open()`, `client.load()` are refused
    // from here, as k6 does, and sockets may connect.
    g.set("__pado_init_done", true).catch(ctx).map_err(caught)?;
    ns.get::<_, Function<'js>>(exec).map_err(|_| ScriptFault {
        message: format!("the script exports no function `{exec}`"),
        stack: String::new(),
    })
}

/// Evaluate the main module from its bytecode: its namespace (exports).
fn evaluate<'js>(ctx: &Ctx<'js>, shared: &Shared) -> Result<Object<'js>, CaughtError<'js>> {
    // Through the module loader, which links the imports of the bytecode it
    // loads (see `BytecodeLoader`).
    let done = Module::import(ctx, shared.main.clone()).catch(ctx)?;
    done.finish::<Object<'js>>().catch(ctx)
}

/// Call the iteration's function (an `async` one is run to its end), then the
/// timers it left; setup's value as JSON.
fn call<'js>(
    ctx: &Ctx<'js>,
    f: &Function<'js>,
    arg: Value<'js>,
    want_value: bool,
) -> Result<Option<String>, ScriptFault> {
    let v: Value<'js> = f.call((arg,)).catch(ctx).map_err(fault_of)?;
    let v = match v.as_promise() {
        Some(p) => p.finish::<Value<'js>>().catch(ctx).map_err(fault_of)?,
        None => v,
    };
    let drain: Function<'js> = ctx
        .globals()
        .get("__pado_drain")
        .map_err(|e| fault(&e.to_string()))?;
    drain.call::<_, ()>(()).catch(ctx).map_err(fault_of)?;
    if !want_value || v.is_undefined() {
        return Ok(None);
    }
    let json = ctx
        .json_stringify(v)
        .catch(ctx)
        .map_err(fault_of)?
        .map(|s| s.to_string())
        .transpose()
        .map_err(|e| fault(&e.to_string()))?;
    Ok(json)
}

/// An exception as a fault: `Name: message` and the JavaScript stack.
pub(crate) fn fault_of(e: CaughtError<'_>) -> ScriptFault {
    match e {
        CaughtError::Exception(ex) => {
            let name = ex
                .get::<_, String>("name")
                .unwrap_or_else(|_| "Error".into());
            ScriptFault {
                message: format!("{name}: {}", ex.message().unwrap_or_default()),
                stack: ex.stack().unwrap_or_default().trim_end().to_string(),
            }
        }
        CaughtError::Value(v) => ScriptFault {
            message: format!(
                "uncaught {}",
                v.as_string()
                    .and_then(|s| s.to_string().ok())
                    .unwrap_or_else(|| format!("{:?}", v.type_of()))
            ),
            stack: String::new(),
        },
        CaughtError::Error(e) => fault(&e.to_string()),
    }
}

/// Evaluate the script once outside any VU (no requests allowed), for its
/// exported functions and `options` (as JSON).
pub(crate) fn read_options(
    shared: &Arc<Shared>,
) -> Result<(Vec<String>, serde_json::Value), ScriptError> {
    let file = &shared.file;
    let as_init = |f: ScriptFault| init_error(file, f.message, prefixed(&f.stack));
    let rt = Runtime::new().map_err(|e| init_error(file, e.to_string(), String::new()))?;
    rt.set_loader(ScriptResolver, BytecodeLoader(shared.clone()));
    let context = Context::full(&rt).map_err(|e| init_error(file, e.to_string(), String::new()))?;
    context.with(|ctx| {
        natives::install(&ctx, shared, "options")
            .catch(&ctx)
            .map_err(|e| as_init(fault_of(e)))?;
        let g = ctx.globals();
        let env = shared
            .env_object(&ctx)
            .catch(&ctx)
            .map_err(|e| as_init(fault_of(e)))?;
        let _ = g.set("__ENV", env);
        let _ = g.set("__VU", 0);
        let _ = g.set("__ITER", 0);
        crate::host::run_prelude(&ctx, shared).map_err(|e| as_init(fault_of(e)))?;
        let ns = evaluate(&ctx, shared).map_err(|e| as_init(fault_of(e)))?;
        let mut exports = Vec::new();
        for k in ns.keys::<String>() {
            let k = k.map_err(|e| init_error(file, e.to_string(), String::new()))?;
            if ns.get::<_, Function>(&k).is_ok() {
                exports.push(k);
            }
        }
        let options: Value = ns
            .get("options")
            .unwrap_or_else(|_| Value::new_undefined(ctx.clone()));
        let json = if options.is_undefined() {
            None
        } else {
            ctx.json_stringify(options)
                .catch(&ctx)
                .map_err(|e| as_init(fault_of(e)))?
                .map(|s| s.to_string())
                .transpose()
                .map_err(|e| init_error(file, e.to_string(), String::new()))?
        };
        let options = match json {
            Some(j) => serde_json::from_str(&j)
                .map_err(|e| init_error(file, format!("options: {e}"), String::new()))?,
            None => serde_json::Value::Null,
        };
        Ok((exports, options))
    })
}

fn prefixed(stack: &str) -> String {
    if stack.is_empty() {
        String::new()
    } else {
        format!("\n{stack}")
    }
}

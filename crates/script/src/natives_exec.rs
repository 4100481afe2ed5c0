//! The natives under `k6/execution`: its live figures (`__pado.exec()`) and
//! `exec.test.abort()` (`__pado.abort()`), each asked of the VU's task.

use std::cell::Cell;

use pado_engine::script::{ScriptCall, ScriptReply};
use rquickjs::{Ctx, Exception, Function, Object};

use crate::natives::{suspend, CURRENT};

/// Install `exec` and `abort` on `p` (`globalThis.__pado`).
pub(crate) fn install<'js>(ctx: &Ctx<'js>, p: &Object<'js>) -> rquickjs::Result<()> {
    p.set(
        "exec",
        Function::new(ctx.clone(), |ctx: Ctx<'js>| execution(&ctx))?,
    )?;
    p.set(
        "abort",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, reason: String| -> rquickjs::Result<()> {
                let y = CURRENT.with(Cell::get);
                if y.is_null() {
                    return Err(Exception::throw_message(
                        &ctx,
                        &format!("test aborted: {reason}"),
                    ));
                }
                // Answered with a stop: the exception below ends the iteration.
                let _ = suspend(&ctx, ScriptCall::Abort(reason.clone()));
                Err(Exception::throw_message(
                    &ctx,
                    &format!("test aborted: {reason}"),
                ))
            },
        )?,
    )?;
    Ok(())
}

/// `__pado.exec()`: k6/execution's live figures (`instance`, the scenario's
/// executor, start and progress), asked of the VU's task.
fn execution<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let e = match suspend(ctx, ScriptCall::Execution)? {
        ScriptReply::Execution(e) => e,
        _ => return Err(Exception::throw_message(ctx, "no answer to k6/execution")),
    };
    let o = Object::new(ctx.clone())?;
    o.set("vusActive", e.instance.vus_active as f64)?;
    o.set("vusInitialized", e.instance.vus_initialized as f64)?;
    o.set(
        "iterationsCompleted",
        e.instance.iterations_completed as f64,
    )?;
    o.set(
        "iterationsInterrupted",
        e.instance.iterations_interrupted as f64,
    )?;
    o.set("currentTestRunDuration", e.test_ms)?;
    o.set("executor", e.executor)?;
    o.set("startTime", e.scenario_start_ms)?;
    o.set("progress", e.progress)?;
    Ok(o)
}

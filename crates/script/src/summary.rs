//! `handleSummary(data)` after the run, as k6 calls it: in a context of its own
//! (the script's init code runs again, as in k6), with k6's summary object, and
//! what it returns read as files: each key (`stdout`, `stderr` or a path) with a
//! string or an `ArrayBuffer`.

use std::sync::Arc;

use pado_engine::script::{ScriptFault, SummaryFiles};
use rquickjs::{ArrayBuffer, CatchResultExt, Context, Object, Runtime, Value};

use crate::host::{BytecodeLoader, ScriptResolver, Shared};
use crate::vu::{fault_of, init};

/// QuickJS's stack limit for `handleSummary` (it runs on the caller's thread,
/// whose stack is at least 2 MiB).
const SUMMARY_STACK: usize = 1024 * 1024;

/// Call the script's `handleSummary` with `data` (JSON): the files it returned.
pub(crate) fn handle_summary(
    shared: &Arc<Shared>,
    data: &str,
) -> Result<SummaryFiles, ScriptFault> {
    let fault = |m: String| ScriptFault {
        message: m,
        stack: String::new(),
    };
    let rt = Runtime::new().map_err(|e| fault(format!("handleSummary's runtime: {e}")))?;
    rt.set_max_stack_size(SUMMARY_STACK);
    rt.set_loader(ScriptResolver, BytecodeLoader(shared.clone()));
    let context = Context::full(&rt).map_err(|e| fault(format!("handleSummary's context: {e}")))?;
    context.with(|ctx| {
        let f = init(&ctx, shared, "handleSummary", 0, "handleSummary")?;
        let data = ctx
            .json_parse(data.as_bytes().to_vec())
            .catch(&ctx)
            .map_err(fault_of)?;
        let v: Value = f.call((data,)).catch(&ctx).map_err(fault_of)?;
        let v = match v.as_promise() {
            Some(p) => p.finish::<Value>().catch(&ctx).map_err(fault_of)?,
            None => v,
        };
        if v.is_undefined() || v.is_null() {
            return Ok(Vec::new());
        }
        let Some(o) = v.as_object() else {
            return Err(fault(
                "handleSummary must return an object of file names and contents".into(),
            ));
        };
        files_of(o)
    })
}

/// Each key of `o` with its bytes: a string as UTF-8, an `ArrayBuffer` (or a
/// typed array's buffer) as it is; anything else is an error naming the key.
fn files_of(o: &Object<'_>) -> Result<SummaryFiles, ScriptFault> {
    let mut out = Vec::new();
    for k in o.keys::<String>() {
        let k = k.map_err(|e| ScriptFault {
            message: e.to_string(),
            stack: String::new(),
        })?;
        let v: Value = o.get(&k).map_err(|e| ScriptFault {
            message: e.to_string(),
            stack: String::new(),
        })?;
        let bytes = if let Some(s) = v.as_string() {
            s.to_string().map(String::into_bytes).ok()
        } else if let Some(ab) = v
            .as_object()
            .and_then(|x| ArrayBuffer::from_object(x.clone()))
        {
            ab.as_bytes().map(<[u8]>::to_vec)
        } else {
            v.as_object()
                .and_then(|x| x.get::<_, Object>("buffer").ok())
                .and_then(ArrayBuffer::from_object)
                .and_then(|ab| ab.as_bytes().map(<[u8]>::to_vec))
        };
        match bytes {
            Some(b) => out.push((k, b)),
            None => {
                return Err(ScriptFault {
                    message: format!(
                        "handleSummary returned `{k}` as a {}: give a string or an ArrayBuffer",
                        v.type_name()
                    ),
                    stack: String::new(),
                })
            }
        }
    }
    Ok(out)
}

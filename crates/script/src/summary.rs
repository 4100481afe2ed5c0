//! `handleSummary(data)` after the run, as k6 calls it: in a context of its own
//! (the script's init code runs again, as in k6), with k6's summary object, and
//! what it returns read as files: each key (`stdout`, `stderr` or a path) with a
//! string or an `ArrayBuffer`. The options that shape k6's summary object
//! (`summaryTrendStats`, `summaryTimeUnit`) are read from the script's options
//! here too ([`options`]).

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

/// `summaryTrendStats` and `summaryTimeUnit` as the script's options give them
/// (their values are judged where the summary is made, with the command line's
/// flags over them); a value of the wrong type is named.
pub(crate) fn options(
    options: &serde_json::Value,
) -> Result<pado_engine::script::SummaryOptions, String> {
    use serde_json::Value as J;
    let trend_stats = match options.get("summaryTrendStats") {
        None | Some(J::Null) => None,
        Some(J::Array(a)) => Some(
            a.iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or("options.summaryTrendStats: must be a list of strings, e.g. [\"avg\", \"p(95)\"]")?,
        ),
        Some(_) => {
            return Err(
                "options.summaryTrendStats: must be a list of strings, e.g. [\"avg\", \"p(95)\"]"
                    .into(),
            )
        }
    };
    let time_unit = match options.get("summaryTimeUnit") {
        None | Some(J::Null) => None,
        Some(J::String(u)) => Some(u.clone()),
        Some(_) => return Err("options.summaryTimeUnit: must be a string: s, ms or us".into()),
    };
    Ok(pado_engine::script::SummaryOptions {
        trend_stats,
        time_unit,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn summary_options_are_read_as_written_and_wrong_types_named() {
        let o = super::options(&json!({
            "summaryTrendStats": ["avg", "p(99.9)", "count"],
            "summaryTimeUnit": "s",
        }))
        .unwrap();
        assert_eq!(
            o.trend_stats.as_deref(),
            Some(&["avg".to_string(), "p(99.9)".into(), "count".into()][..])
        );
        assert_eq!(o.time_unit.as_deref(), Some("s"));
        let none = super::options(&json!({"vus": 1})).unwrap();
        assert_eq!(none, Default::default());
        let e = super::options(&json!({"summaryTrendStats": "avg"})).unwrap_err();
        assert!(e.contains("options.summaryTrendStats"), "{e}");
        let e = super::options(&json!({"summaryTrendStats": ["avg", 95]})).unwrap_err();
        assert!(e.contains("list of strings"), "{e}");
        let e = super::options(&json!({"summaryTimeUnit": 1})).unwrap_err();
        assert!(e.contains("options.summaryTimeUnit"), "{e}");
    }
}

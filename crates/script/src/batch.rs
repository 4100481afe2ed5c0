//! k6's `http.batch` as one call to the VU's task: `__pado.batch(requests,
//! parallel, perHost)` hands every request over at once ([`ScriptBatch`]), the
//! engine sends them concurrently (k6's `batch` and `batchPerHost` limits) and
//! the VU resumes once all are answered, with the responses in the order
//! given. The jars the requests use go over once each, however many share one.

use pado_engine::script::{ScriptBatch, ScriptCall, ScriptReply};
use rquickjs::{Array, Class, Ctx, Exception, Function, Object, Value};

use crate::cookie_jar::{self, JarHandle};
use crate::natives::{build_request, suspend};
use crate::response_obj::{self, RequestShown, ShownHeaders};

/// Install `__pado.batch(requests, parallel, perHost, shape)` on `p`: each
/// request `[method, url, body, options]` as `__pado.request` takes them; an
/// array of their `Response`s back (`shape` as `__pado.request` takes it).
pub(crate) fn install<'js>(ctx: &Ctx<'js>, p: &Object<'js>) -> rquickjs::Result<()> {
    p.set(
        "batch",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, list: Array<'js>, parallel: f64, per_host: f64, shape: Array<'js>| {
                batch(&ctx, &list, (parallel, per_host), &shape)
            },
        )?,
    )?;
    Ok(())
}

/// Limits as k6 reads them: a whole number, 0 (or less) for none.
fn limit(n: f64) -> usize {
    if n.is_finite() && n >= 1.0 {
        n as usize
    } else {
        0
    }
}

fn batch<'js>(
    ctx: &Ctx<'js>,
    list: &Array<'js>,
    (parallel, per_host): (f64, f64),
    shape: &Array<'js>,
) -> rquickjs::Result<Array<'js>> {
    let mut b = ScriptBatch {
        parallel: limit(parallel),
        per_host: limit(per_host),
        ..ScriptBatch::default()
    };
    // Each jar handed over, with its place in `b.jars`.
    let mut handles: Vec<(Class<'js, JarHandle>, usize)> = Vec::new();
    for item in list.iter::<Array<'js>>() {
        let item = item?;
        let method: String = item.get(0)?;
        let url: String = item.get(1)?;
        let body: Value<'js> = item.get(2)?;
        let o: Array<'js> = item.get(3)?;
        let req = build_request(ctx, method, url, body, &o)?;
        let slot = match cookie_jar::jar_of(&o) {
            Some(h) => {
                let id = h.borrow().id;
                match handles.iter().find(|(k, _)| k.borrow().id == id) {
                    Some((_, i)) => *i,
                    None => {
                        b.jars.push(cookie_jar::take(&h));
                        handles.push((h, b.jars.len() - 1));
                        b.jars.len() - 1
                    }
                }
            }
            None => {
                // No jar: one of its own, empty, kept by nobody.
                b.jars.push(Default::default());
                b.jars.len() - 1
            }
        };
        b.jar_of.push(slot);
        b.requests.push(req);
    }
    let reply = match suspend(ctx, ScriptCall::Batch(Box::new(b)))? {
        ScriptReply::Batch(r) => r,
        _ => return Err(Exception::throw_message(ctx, "no answer to a batch")),
    };
    let mut reply = *reply;
    for (h, i) in &handles {
        if let Some(jar) = reply.jars.get_mut(*i) {
            cookie_jar::put(h, std::mem::take(jar));
        }
    }
    let out = Array::new(ctx.clone())?;
    for (i, r) in reply.responses.iter_mut().enumerate() {
        let item: Array<'js> = list.get(i)?;
        let o: Array<'js> = item.get(3)?;
        let shown = RequestShown {
            method: item.get(0)?,
            url: item.get(1)?,
            headers: ShownHeaders::Object(o.get(0)?),
            body: item.get(2)?,
        };
        out.set(i, response_obj::make(ctx, r, shape, shown)?)?;
    }
    Ok(out)
}

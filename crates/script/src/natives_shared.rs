//! The natives under `k6/data`'s `SharedArray`: its rows live once in the
//! script's [`Shared`] state for every VU; each VU keeps only the `Arc` of the
//! arrays it opened and decodes a row (JSON) when the script reads it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use rquickjs::{Ctx, Exception, Function, Object};

use crate::host::{Shared, SharedRows};

/// Install `sharedLen`, `sharedSet` and `sharedRow` on `p` (`globalThis.__pado`).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    p: &Object<'js>,
    shared: &Arc<Shared>,
) -> rquickjs::Result<()> {
    // SharedArray: the rows live once in `Shared`; each VU keeps only the `Arc`
    // of the arrays it opened (looked up once per array, not per row).
    let opened: Rc<RefCell<HashMap<String, SharedRows>>> = Rc::default();
    let (s, o) = (shared.clone(), opened.clone());
    p.set(
        "sharedLen",
        Function::new(ctx.clone(), move |name: String| {
            let rows = s.shared_get(&name)?;
            let n = rows.len() as f64;
            o.borrow_mut().insert(name, rows);
            Some(n)
        })?,
    )?;
    let (s, o) = (shared.clone(), opened.clone());
    p.set(
        "sharedSet",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, json: String| -> rquickjs::Result<f64> {
                let rows = s
                    .shared_set(&name, &json)
                    .map_err(|e| Exception::throw_message(&ctx, &e))?;
                let n = rows.len() as f64;
                o.borrow_mut().insert(name, rows);
                Ok(n)
            },
        )?,
    )?;
    let o = opened;
    p.set(
        "sharedRow",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, i: f64| -> rquickjs::Result<rquickjs::String<'js>> {
                let o = o.borrow();
                let row = o
                    .get(&name)
                    .and_then(|rows| rows.get(i as usize))
                    .ok_or_else(|| Exception::throw_message(&ctx, "no such SharedArray row"))?;
                rquickjs::String::from_str(ctx.clone(), row)
            },
        )?,
    )?;
    Ok(())
}

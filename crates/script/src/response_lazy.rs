//! The parts of k6's `Response` most scripts never read, made when first read.
//!
//! A response's body as text, its `timings` (eight numbers), the `request` it
//! shows (method, url, headers, body), its `headers` and its `cookies` were
//! made for every response, four objects and ~20 properties, though a script
//! such as `bench/k6script.js` reads none of them (a check of `status` is the
//! usual reading). Here the response is an object of a class of its own
//! ([`Raw`], opaque to scripts: no property, no symbol holds it) that keeps
//! what those parts are made from, and each part is an own, enumerable,
//! configurable *accessor* property whose getter builds the value and defines
//! it in place as the plain data property k6 has (the same position in
//! `Object.keys`, so a second read costs nothing) and whose setter defines the
//! assigned value the same way. So `Object.keys(res)`, `JSON.stringify(res)`,
//! `{...res}`, `delete res.timings` and `res.timings = x` behave as on k6's
//! data properties; only `Object.getOwnPropertyDescriptor` before the first
//! read shows the accessor. The getters and setters are made once per context
//! (a function belongs to its context's realm: a part made by another
//! context's function would have that context's `Object.prototype`) and kept
//! in the array `js/http.js` hands every request (`SHAPE`).

use pado_engine::script::ScriptTimings;
use rquickjs::class::{JsClass, Trace, Tracer, Writable};
use rquickjs::function::{Constructor, This};
use rquickjs::{qjs, Array, Class, Ctx, Function, JsLifetime, Object, Value};

use crate::response_obj::{self, Names, RequestShown, ShownHeaders};

/// The parts made when first read, in the order of their getter and setter
/// pairs in `SHAPE` (from [`FIRST_ACCESSOR`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Body = 0,
    Timings = 1,
    Request = 2,
    Headers = 3,
    Cookies = 4,
}

impl Part {
    const ALL: [Part; 5] = [
        Part::Body,
        Part::Timings,
        Part::Request,
        Part::Headers,
        Part::Cookies,
    ];

    /// The property's name, by its index in [`response_obj`]'s names.
    fn name(self) -> usize {
        match self {
            Part::Body => response_obj::BODY,
            Part::Timings => response_obj::TIMINGS,
            Part::Request => response_obj::REQUEST,
            Part::Headers => response_obj::HEADERS,
            Part::Cookies => response_obj::COOKIES,
        }
    }
}

/// Where in `SHAPE` the getter of [`Part`] `p` is (its setter the next slot):
/// `FIRST_ACCESSOR + 2 * p`. The slots before hold what `js/http.js` puts
/// there (`response_obj::part`).
pub(crate) const FIRST_ACCESSOR: usize = 3;
const SHAPE_LEN: usize = FIRST_ACCESSOR + 2 * Part::ALL.len();

/// What a response's seldom-read parts are made from: the answer's own
/// buffers moved here (no copy), the request's values as `js/http.js` sent
/// them, and `js/forms.js`'s cookie reader only when a `Set-Cookie` came.
pub(crate) struct Raw<'js> {
    pub(crate) body: Vec<u8>,
    pub(crate) timings: ScriptTimings,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) shown: RequestShown<'js>,
    /// `responseCookies(pairs, at)` of `js/forms.js` (through `js/http.js`),
    /// when a header is `Set-Cookie`; `None` makes `cookies` an empty object.
    pub(crate) read_cookies: Option<Value<'js>>,
}

// SAFETY: `Raw<'js>`'s only lifetime is that of its JavaScript values; the
// changed type is the same struct with them at the new lifetime.
unsafe impl<'js> JsLifetime<'js> for Raw<'js> {
    type Changed<'to> = Raw<'to>;
}

impl<'js> Trace<'js> for Raw<'js> {
    fn trace<'a>(&self, tracer: Tracer<'a, 'js>) {
        let s = &self.shown;
        for v in [&s.method, &s.url, &s.body] {
            v.trace(tracer);
        }
        match &s.headers {
            ShownHeaders::Object(v) => v.trace(tracer),
            ShownHeaders::Pairs(pairs) => pairs.iter().for_each(|(_, v)| v.trace(tracer)),
        }
        if let Some(f) = &self.read_cookies {
            f.trace(tracer);
        }
    }
}

impl<'js> JsClass<'js> for Raw<'js> {
    const NAME: &'static str = "Response";
    type Mutable = Writable;

    fn constructor(_ctx: &Ctx<'js>) -> rquickjs::Result<Option<Constructor<'js>>> {
        Ok(None)
    }
}

/// A new response object: of class [`Raw`] holding `raw`, its prototype
/// `proto` (`js/http.js`'s `Response.prototype`).
pub(crate) fn new_response<'js>(
    raw: Raw<'js>,
    proto: Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    Ok(Class::instance_proto(raw, proto)?.into_inner())
}

/// Define `part` on `res` as the accessor that makes it when first read.
/// The context's getters and setters are made on its first response.
pub(crate) fn define_lazy<'js>(
    ctx: &Ctx<'js>,
    names: &Names,
    res: &Object<'js>,
    parts: &Array<'js>,
    part: Part,
) -> rquickjs::Result<()> {
    if parts.len() < SHAPE_LEN {
        make_accessors(ctx, parts)?;
    }
    let at = FIRST_ACCESSOR + 2 * part as usize;
    let get: Value<'js> = parts.get(at)?;
    let set: Value<'js> = parts.get(at + 1)?;
    let flags = qjs::JS_PROP_HAS_GET
        | qjs::JS_PROP_HAS_SET
        | qjs::JS_PROP_HAS_ENUMERABLE
        | qjs::JS_PROP_ENUMERABLE
        | qjs::JS_PROP_HAS_CONFIGURABLE
        | qjs::JS_PROP_CONFIGURABLE;
    // SAFETY: a live context, its object and functions, an atom of its
    // runtime; `JS_DefineProperty` takes no reference of the values it is
    // given.
    let rc = unsafe {
        qjs::JS_DefineProperty(
            ctx.as_raw().as_ptr(),
            res.as_raw(),
            names.atoms[part.name()],
            qjs::JS_UNDEFINED,
            get.as_raw(),
            set.as_raw(),
            flags as _,
        )
    };
    if rc < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Ok(())
}

/// This context's getter and setter of each [`Part`], appended to `parts`.
fn make_accessors<'js>(ctx: &Ctx<'js>, parts: &Array<'js>) -> rquickjs::Result<()> {
    for (i, part) in Part::ALL.into_iter().enumerate() {
        let get = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, this: This<Value<'js>>| -> rquickjs::Result<Value<'js>> {
                read(&ctx, &this.0, part)
            },
        )?;
        let set = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, this: This<Value<'js>>, v: Value<'js>| -> rquickjs::Result<()> {
                if let Some(obj) = this.0.as_object() {
                    settle(&ctx, &Names::of(&ctx)?, obj, part, v)?;
                }
                Ok(())
            },
        )?;
        parts.set(FIRST_ACCESSOR + 2 * i, get)?;
        parts.set(FIRST_ACCESSOR + 2 * i + 1, set)?;
    }
    Ok(())
}

/// `part` of the response `this`, made and left as a data property. On
/// anything but a response (the getter taken off and called on another
/// object) it is `undefined`.
fn read<'js>(ctx: &Ctx<'js>, this: &Value<'js>, part: Part) -> rquickjs::Result<Value<'js>> {
    let undefined = Value::new_undefined(ctx.clone());
    let Some(obj) = this.as_object() else {
        return Ok(undefined);
    };
    let Some(raw) = Class::<Raw<'js>>::from_object(obj) else {
        return Ok(undefined);
    };
    let names = Names::of(ctx)?;
    let v = make_part(ctx, &names, &raw, part)?;
    if settle(ctx, &names, obj, part, v.clone())? && part == Part::Body {
        // The bytes are text now: nothing reads them again.
        raw.borrow_mut().body = Vec::new();
    }
    Ok(v)
}

/// Define `part` of `obj` as the data property `v` (writable, enumerable,
/// configurable, where the accessor was); whether it could be (not on a
/// frozen response, where every read makes the part anew).
fn settle<'js>(
    ctx: &Ctx<'js>,
    names: &Names,
    obj: &Object<'js>,
    part: Part,
    v: Value<'js>,
) -> rquickjs::Result<bool> {
    let c = ctx.as_raw().as_ptr();
    // SAFETY: a live context, an object of it and an atom of its runtime; the
    // call takes a reference to the value, a new one (`v` drops its own).
    // Without `JS_PROP_THROW` a property that cannot be redefined is 0, not
    // an exception.
    let rc = unsafe {
        let raw = qjs::JS_DupValue(c, v.as_raw());
        qjs::JS_DefinePropertyValue(
            c,
            obj.as_raw(),
            names.atoms[part.name()],
            raw,
            qjs::JS_PROP_C_W_E as _,
        )
    };
    if rc < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Ok(rc > 0)
}

/// `part` made from `raw`.
fn make_part<'js>(
    ctx: &Ctx<'js>,
    names: &Names,
    raw: &Class<'js, Raw<'js>>,
    part: Part,
) -> rquickjs::Result<Value<'js>> {
    match part {
        Part::Body => {
            let r = raw.borrow();
            let text = String::from_utf8_lossy(&r.body);
            Ok(rquickjs::String::from_str(ctx.clone(), &text)?.into_value())
        }
        Part::Timings => {
            let t = raw.borrow().timings;
            Ok(response_obj::timings(ctx, &names.atoms, &t)?.into_value())
        }
        Part::Request => {
            let r = raw.borrow();
            Ok(response_obj::request(ctx, &names.atoms, &r.shown)?.into_value())
        }
        Part::Headers => {
            let r = raw.borrow();
            Ok(response_obj::headers(ctx, &r.headers)?.into_value())
        }
        Part::Cookies => {
            // Out of the borrow: the reader is the script's JavaScript.
            let (read, pairs) = {
                let r = raw.borrow();
                let Some(read) = r.read_cookies.clone() else {
                    return Ok(Object::new(ctx.clone())?.into_value());
                };
                (read, response_obj::cookie_pairs(ctx, &r.headers)?)
            };
            let read: Function<'js> = read.into_function().ok_or(rquickjs::Error::Exception)?;
            read.call((pairs, 0))
        }
    }
}

//! k6's `Response` object, made in Rust from the engine's answer.
//!
//! A response is the largest thing a request makes on the JavaScript side: its
//! eleven fields, the eight timings, the headers and the request shown. It was
//! made by a constructor in `js/http.js` from a flat array the native filled,
//! each field an interpreted store (a look through the prototype chain for a
//! setter first). Here each property is defined straight onto the object under
//! a name made an atom once per runtime ([`Names`]), and no array is filled and
//! read back: about 6% fewer instructions for a plain `http.get` (78,000 to
//! 73,300 on the load worker). A header named like an accessor of
//! `Object.prototype` (`__proto__`) is a header like any other, where a store
//! would have set the object's prototype. The object is the one the script
//! always saw: the same own properties in the same order, the prototype of
//! `js/http.js`'s `Response` (its `json()` and `html()`), the body made text
//! only when read (the accessor of `js/http.js`).

use pado_engine::script::ScriptResponse;
use rquickjs::{qjs, Array, ArrayBuffer, Ctx, Function, JsLifetime, Object, Value};

/// The property names of a response, its timings and its request (whose `url`,
/// `headers` and `body` are the response's names), in the order their indexes
/// below give.
const NAMES: [&str; 20] = [
    "status",
    "body",
    "url",
    "error",
    "error_code",
    "proto",
    "timings",
    "request",
    "status_text",
    "headers",
    "cookies",
    "blocked",
    "looking_up",
    "connecting",
    "tls_handshaking",
    "sending",
    "waiting",
    "receiving",
    "duration",
    "method",
];
const STATUS: usize = 0;
const BODY: usize = 1;
const URL: usize = 2;
const ERROR: usize = 3;
const ERROR_CODE: usize = 4;
const PROTO: usize = 5;
const TIMINGS: usize = 6;
const REQUEST: usize = 7;
const STATUS_TEXT: usize = 8;
const HEADERS: usize = 9;
const COOKIES: usize = 10;
/// The first of the eight timings, in k6's order.
const BLOCKED: usize = 11;
const METHOD: usize = 19;

/// Where `js/http.js` puts what a response is made with, in the array it hands
/// every request (`SHAPE` there).
mod part {
    /// `Response.prototype`.
    pub(super) const PROTOTYPE: usize = 0;
    /// The body's getter and setter (made text when first read or assigned).
    pub(super) const GET_BODY: usize = 1;
    pub(super) const SET_BODY: usize = 2;
    /// `responseCookies(pairs, at)` of `js/body.js`.
    pub(super) const COOKIES: usize = 3;
    /// The symbol the body's bytes are kept under until read.
    pub(super) const RAW: usize = 4;
}

/// The names as atoms of one runtime (every context on it shares them), made
/// on the first response and kept for the runtime's life (their references
/// are never given back: they are names `js/http.js` holds anyway).
#[derive(Clone, Copy)]
struct Names {
    atoms: [qjs::JSAtom; NAMES.len()],
    /// The body bytes' symbol (a registered symbol: one for the runtime).
    raw: qjs::JSAtom,
}

// SAFETY: `Names` holds no JavaScript value with a lifetime, only atom numbers.
unsafe impl<'js> JsLifetime<'js> for Names {
    type Changed<'to> = Names;
}

impl Names {
    /// This runtime's names, made on first use.
    fn of<'js>(ctx: &Ctx<'js>, parts: &Array<'js>) -> rquickjs::Result<Names> {
        if let Some(n) = ctx.userdata::<Names>() {
            return Ok(*n);
        }
        let raw_sym: Value<'js> = parts.get(part::RAW)?;
        let c = ctx.as_raw().as_ptr();
        let mut atoms = [0; NAMES.len()];
        for (a, n) in atoms.iter_mut().zip(NAMES) {
            // SAFETY: a live context; the bytes are valid UTF-8 of that length.
            *a = unsafe { qjs::JS_NewAtomLen(c, n.as_ptr().cast(), n.len() as _) };
        }
        // SAFETY: a live context and a value of it (the symbol).
        let raw = unsafe { qjs::JS_ValueToAtom(c, raw_sym.as_raw()) };
        let names = Names { atoms, raw };
        // Another borrow cannot be alive here (none is kept across calls).
        let _ = ctx.store_userdata(names);
        Ok(names)
    }
}

/// What the response shows of its request (`response.request`): the values
/// `js/http.js` sent, not copies.
pub(crate) struct RequestShown<'js> {
    pub(crate) method: Value<'js>,
    pub(crate) url: Value<'js>,
    pub(crate) headers: Value<'js>,
    pub(crate) body: Value<'js>,
}

/// Define `obj[atom] = v` (writable, enumerable, configurable), as an assignment
/// to a new property would, without looking for a setter.
fn define<'js>(
    ctx: &Ctx<'js>,
    obj: &Object<'js>,
    atom: qjs::JSAtom,
    v: Value<'js>,
) -> rquickjs::Result<()> {
    let c = ctx.as_raw().as_ptr();
    // SAFETY: a live context, an object of it and an atom of its runtime; the
    // call takes a reference to the value, a new one (`v` drops its own).
    let rc = unsafe {
        let raw = qjs::JS_DupValue(c, v.as_raw());
        qjs::JS_DefinePropertyValue(c, obj.as_raw(), atom, raw, qjs::JS_PROP_C_W_E as _)
    };
    if rc < 0 {
        return Err(rquickjs::Error::Exception);
    }
    Ok(())
}

/// A new object whose prototype is `proto`.
fn object_with_proto<'js>(ctx: &Ctx<'js>, proto: &Value<'js>) -> rquickjs::Result<Object<'js>> {
    // SAFETY: a live context and a value of it; the result's reference is ours.
    let v = unsafe {
        let raw = qjs::JS_NewObjectProto(ctx.as_raw().as_ptr(), proto.as_raw());
        if qjs::JS_IsException(raw) {
            return Err(rquickjs::Error::Exception);
        }
        Value::from_raw(ctx.clone(), raw)
    };
    v.into_object().ok_or(rquickjs::Error::Exception)
}

fn text<'js>(ctx: &Ctx<'js>, s: &str) -> rquickjs::Result<Value<'js>> {
    Ok(rquickjs::String::from_str(ctx.clone(), s)?.into_value())
}

/// The `Response` a request's answer is for the script: `parts` as
/// `js/http.js`'s `SHAPE` lays them out. The body's bytes are taken from `r`.
pub(crate) fn make<'js>(
    ctx: &Ctx<'js>,
    r: &mut ScriptResponse,
    parts: &Array<'js>,
    req: RequestShown<'js>,
) -> rquickjs::Result<Object<'js>> {
    let names = Names::of(ctx, parts)?;
    let n = &names.atoms;
    let proto: Value<'js> = parts.get(part::PROTOTYPE)?;
    let res = object_with_proto(ctx, &proto)?;
    define(
        ctx,
        &res,
        n[STATUS],
        Value::new_int(ctx.clone(), i32::from(r.status)),
    )?;
    if r.body.is_empty() {
        define(ctx, &res, n[BODY], text(ctx, "")?)?;
    } else {
        // Not `lazy_builtins::array_buffer`: the script never sees these bytes
        // (they are kept under a symbol until the body is read as text), so
        // they need no prototype, and a VU that reads its answers as text
        // never makes the binary-data built-ins.
        let bytes = ArrayBuffer::new(ctx.clone(), std::mem::take(&mut r.body))?;
        define(ctx, &res, names.raw, bytes.into_value())?;
        let get: Function<'js> = parts.get(part::GET_BODY)?;
        let set: Function<'js> = parts.get(part::SET_BODY)?;
        let flags = qjs::JS_PROP_HAS_GET
            | qjs::JS_PROP_HAS_SET
            | qjs::JS_PROP_HAS_ENUMERABLE
            | qjs::JS_PROP_ENUMERABLE
            | qjs::JS_PROP_HAS_CONFIGURABLE
            | qjs::JS_PROP_CONFIGURABLE;
        // SAFETY: a live context, its object and functions; `JS_DefineProperty`
        // takes no reference of the values it is given.
        let rc = unsafe {
            qjs::JS_DefineProperty(
                ctx.as_raw().as_ptr(),
                res.as_raw(),
                n[BODY],
                qjs::JS_UNDEFINED,
                get.as_raw(),
                set.as_raw(),
                flags as _,
            )
        };
        if rc < 0 {
            return Err(rquickjs::Error::Exception);
        }
    }
    define(ctx, &res, n[URL], text(ctx, &r.url)?)?;
    define(ctx, &res, n[ERROR], text(ctx, &r.error)?)?;
    define(
        ctx,
        &res,
        n[ERROR_CODE],
        Value::new_number(ctx.clone(), f64::from(r.error_code)),
    )?;
    define(ctx, &res, n[PROTO], text(ctx, &r.proto)?)?;
    define(ctx, &res, n[TIMINGS], timings(ctx, n, r)?.into_value())?;
    define(ctx, &res, n[REQUEST], request(ctx, n, req)?.into_value())?;
    define(ctx, &res, n[STATUS_TEXT], text(ctx, "")?)?;
    let (headers, sets_cookies) = headers(ctx, r)?;
    define(ctx, &res, n[HEADERS], headers.into_value())?;
    let cookies = if sets_cookies {
        cookies(ctx, parts, r)?
    } else {
        Object::new(ctx.clone())?.into_value()
    };
    define(ctx, &res, n[COOKIES], cookies)?;
    Ok(res)
}

/// k6's eight timings (milliseconds).
fn timings<'js>(
    ctx: &Ctx<'js>,
    n: &[qjs::JSAtom; NAMES.len()],
    r: &ScriptResponse,
) -> rquickjs::Result<Object<'js>> {
    let t = &r.timings;
    let o = Object::new(ctx.clone())?;
    let values = [
        t.blocked,
        t.looking_up,
        t.connecting,
        t.tls_handshaking,
        t.sending,
        t.waiting,
        t.receiving,
        t.duration,
    ];
    for (i, v) in values.into_iter().enumerate() {
        define(ctx, &o, n[BLOCKED + i], Value::new_number(ctx.clone(), v))?;
    }
    Ok(o)
}

/// `response.request`: method, url, headers and body as sent.
fn request<'js>(
    ctx: &Ctx<'js>,
    n: &[qjs::JSAtom; NAMES.len()],
    req: RequestShown<'js>,
) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    define(ctx, &o, n[METHOD], req.method)?;
    define(ctx, &o, n[URL], req.url)?;
    define(ctx, &o, n[HEADERS], req.headers)?;
    define(ctx, &o, n[BODY], req.body)?;
    Ok(o)
}

thread_local! {
    /// The canonical names of a response's headers, kept between responses so
    /// that none is allocated once a worker has seen its longest names.
    static CANONICAL: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The headers under Go's canonical names (as k6 shows them), a name given
/// more than once one property whose values are joined with ", ", in the order
/// of each name's first appearance; and whether any is `Set-Cookie`.
fn headers<'js>(ctx: &Ctx<'js>, r: &ScriptResponse) -> rquickjs::Result<(Object<'js>, bool)> {
    CANONICAL.with(|names| {
        let mut names = names.borrow_mut();
        if names.len() < r.headers.len() {
            names.resize_with(r.headers.len(), String::new);
        }
        for ((n, _), out) in r.headers.iter().zip(names.iter_mut()) {
            crate::natives::canonical_into(n, out);
        }
        headers_named(ctx, r, &names[..r.headers.len()])
    })
}

/// [`headers`], each header's canonical name in `names` (by index).
fn headers_named<'js>(
    ctx: &Ctx<'js>,
    r: &ScriptResponse,
    names: &[String],
) -> rquickjs::Result<(Object<'js>, bool)> {
    let o = Object::new(ctx.clone())?;
    let mut sets_cookies = false;
    let mut joined = String::new();
    let c = ctx.as_raw().as_ptr();
    for (i, (name, (_, v))) in names.iter().zip(&r.headers).enumerate() {
        if names[..i].contains(name) {
            continue;
        }
        sets_cookies |= name == "Set-Cookie";
        let later = names[i + 1..].iter().zip(&r.headers[i + 1..]);
        let value = if names[i + 1..].contains(name) {
            joined.clear();
            joined.push_str(v);
            for (_, (_, w)) in later.filter(|(m, _)| *m == name) {
                joined.push_str(", ");
                joined.push_str(w);
            }
            joined.as_str()
        } else {
            v.as_str()
        };
        // SAFETY: a live context; the bytes are valid UTF-8 of that length.
        let atom = unsafe { qjs::JS_NewAtomLen(c, name.as_ptr().cast(), name.len() as _) };
        if atom == qjs::JS_ATOM_NULL {
            return Err(rquickjs::Error::Exception);
        }
        let done = text(ctx, value).and_then(|v| define(ctx, &o, atom, v));
        // SAFETY: the reference `JS_NewAtomLen` gave.
        unsafe { qjs::JS_FreeAtom(c, atom) };
        done?;
    }
    Ok((o, sets_cookies))
}

/// `response.cookies`, by `js/body.js`'s reading of the `Set-Cookie` headers.
fn cookies<'js>(
    ctx: &Ctx<'js>,
    parts: &Array<'js>,
    r: &ScriptResponse,
) -> rquickjs::Result<Value<'js>> {
    let pairs = Array::new(ctx.clone())?;
    let mut name = String::new();
    for (i, (n, v)) in r.headers.iter().enumerate() {
        crate::natives::canonical_into(n, &mut name);
        pairs.set(2 * i, name.as_str())?;
        pairs.set(2 * i + 1, v.as_str())?;
    }
    let read: Function<'js> = parts.get(part::COOKIES)?;
    read.call((pairs, 0))
}

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
//! `js/http.js`'s `Response` (its `json()` and `html()`). Its body as text,
//! timings, request, headers and cookies are made when first read
//! ([`response_lazy`](crate::response_lazy)).

use pado_engine::script::{ScriptResponse, ScriptTimings};
use rquickjs::{qjs, Array, Ctx, JsLifetime, Object, Value};

use crate::response_lazy::{self, Part, Raw};

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
pub(crate) const BODY: usize = 1;
const URL: usize = 2;
const ERROR: usize = 3;
const ERROR_CODE: usize = 4;
const PROTO: usize = 5;
pub(crate) const TIMINGS: usize = 6;
pub(crate) const REQUEST: usize = 7;
const STATUS_TEXT: usize = 8;
pub(crate) const HEADERS: usize = 9;
pub(crate) const COOKIES: usize = 10;
/// The first of the eight timings, in k6's order.
const BLOCKED: usize = 11;
const METHOD: usize = 19;

/// Where `js/http.js` puts what a response is made with, in the array it hands
/// every request (`SHAPE` there); the natives add the getters and setters of
/// the parts made when read after them (`response_lazy::FIRST_ACCESSOR`).
mod part {
    /// `Response.prototype`.
    pub(super) const PROTOTYPE: usize = 0;
    /// `responseCookies(pairs, at)` of `js/forms.js`.
    pub(super) const COOKIES: usize = 1;
    // 2: the VU's cookie jar (`request_plain::VU_JAR`).
}

/// The names as atoms of one runtime (every context on it shares them), made
/// on the first response and kept for the runtime's life (their references
/// are never given back: they are names `js/http.js` holds anyway).
#[derive(Clone, Copy)]
pub(crate) struct Names {
    pub(crate) atoms: [qjs::JSAtom; NAMES.len()],
}

// SAFETY: `Names` holds no JavaScript value with a lifetime, only atom numbers.
unsafe impl<'js> JsLifetime<'js> for Names {
    type Changed<'to> = Names;
}

impl Names {
    /// This runtime's names, made on first use.
    pub(crate) fn of(ctx: &Ctx<'_>) -> rquickjs::Result<Names> {
        if let Some(n) = ctx.userdata::<Names>() {
            return Ok(*n);
        }
        let c = ctx.as_raw().as_ptr();
        let mut atoms = [0; NAMES.len()];
        for (a, n) in atoms.iter_mut().zip(NAMES) {
            // SAFETY: a live context; the bytes are valid UTF-8 of that length.
            *a = unsafe { qjs::JS_NewAtomLen(c, n.as_ptr().cast(), n.len() as _) };
        }
        let names = Names { atoms };
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
    pub(crate) headers: ShownHeaders<'js>,
    pub(crate) body: Value<'js>,
}

/// The headers a response shows of its request.
pub(crate) enum ShownHeaders<'js> {
    /// `js/http.js`'s copy of the script's headers (`prepare`).
    Object(Value<'js>),
    /// The script's headers, name and value, in the order a copy has them
    /// (`request_plain`): made an object when the request is read.
    Pairs(Vec<(String, Value<'js>)>),
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

fn text<'js>(ctx: &Ctx<'js>, s: &str) -> rquickjs::Result<Value<'js>> {
    Ok(rquickjs::String::from_str(ctx.clone(), s)?.into_value())
}

/// The `Response` a request's answer is for the script: `parts` as
/// `js/http.js`'s `SHAPE` lays them out. The body's bytes and the headers are
/// moved out of `r` into the response, kept until a script reads them.
pub(crate) fn make<'js>(
    ctx: &Ctx<'js>,
    r: &mut ScriptResponse,
    parts: &Array<'js>,
    req: RequestShown<'js>,
) -> rquickjs::Result<Object<'js>> {
    let names = Names::of(ctx)?;
    let n = &names.atoms;
    let proto: Object<'js> = parts.get(part::PROTOTYPE)?;
    let sets_cookies = r
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("set-cookie"));
    let read_cookies = if sets_cookies {
        Some(parts.get(part::COOKIES)?)
    } else {
        None
    };
    let body_empty = r.body.is_empty();
    let raw = Raw {
        body: std::mem::take(&mut r.body),
        timings: r.timings,
        headers: std::mem::take(&mut r.headers),
        shown: req,
        read_cookies,
    };
    let res = response_lazy::new_response(raw, proto)?;
    define(
        ctx,
        &res,
        n[STATUS],
        Value::new_int(ctx.clone(), i32::from(r.status)),
    )?;
    if body_empty {
        define(ctx, &res, n[BODY], text(ctx, "")?)?;
    } else {
        response_lazy::define_lazy(ctx, &names, &res, parts, Part::Body)?;
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
    response_lazy::define_lazy(ctx, &names, &res, parts, Part::Timings)?;
    response_lazy::define_lazy(ctx, &names, &res, parts, Part::Request)?;
    define(ctx, &res, n[STATUS_TEXT], text(ctx, "")?)?;
    response_lazy::define_lazy(ctx, &names, &res, parts, Part::Headers)?;
    response_lazy::define_lazy(ctx, &names, &res, parts, Part::Cookies)?;
    Ok(res)
}

/// k6's eight timings (milliseconds).
pub(crate) fn timings<'js>(
    ctx: &Ctx<'js>,
    n: &[qjs::JSAtom; NAMES.len()],
    t: &ScriptTimings,
) -> rquickjs::Result<Object<'js>> {
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
pub(crate) fn request<'js>(
    ctx: &Ctx<'js>,
    n: &[qjs::JSAtom; NAMES.len()],
    req: &RequestShown<'js>,
) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    define(ctx, &o, n[METHOD], req.method.clone())?;
    define(ctx, &o, n[URL], req.url.clone())?;
    let headers = match &req.headers {
        ShownHeaders::Object(v) => v.clone(),
        ShownHeaders::Pairs(pairs) => {
            let h = Object::new(ctx.clone())?;
            for (k, v) in pairs {
                h.set(k.as_str(), v.clone())?;
            }
            h.into_value()
        }
    };
    define(ctx, &o, n[HEADERS], headers)?;
    define(ctx, &o, n[BODY], req.body.clone())?;
    Ok(o)
}

thread_local! {
    /// The canonical names of a response's headers, kept between responses so
    /// that none is allocated once a worker has seen its longest names.
    static CANONICAL: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The headers under Go's canonical names (as k6 shows them), a name given
/// more than once one property whose values are joined with ", ", in the order
/// of each name's first appearance.
pub(crate) fn headers<'js>(
    ctx: &Ctx<'js>,
    headers: &[(String, String)],
) -> rquickjs::Result<Object<'js>> {
    CANONICAL.with(|names| {
        let mut names = names.borrow_mut();
        if names.len() < headers.len() {
            names.resize_with(headers.len(), String::new);
        }
        for ((n, _), out) in headers.iter().zip(names.iter_mut()) {
            crate::natives::canonical_into(n, out);
        }
        headers_named(ctx, headers, &names[..headers.len()])
    })
}

/// [`headers`], each header's canonical name in `names` (by index).
fn headers_named<'js>(
    ctx: &Ctx<'js>,
    headers: &[(String, String)],
    names: &[String],
) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    let mut joined = String::new();
    let c = ctx.as_raw().as_ptr();
    for (i, (name, (_, v))) in names.iter().zip(headers).enumerate() {
        if names[..i].contains(name) {
            continue;
        }
        let later = names[i + 1..].iter().zip(&headers[i + 1..]);
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
    Ok(o)
}

/// The headers as `js/forms.js`'s `responseCookies(pairs, at)` reads them
/// (canonical name, value, one after the other), for `response.cookies`.
pub(crate) fn cookie_pairs<'js>(
    ctx: &Ctx<'js>,
    headers: &[(String, String)],
) -> rquickjs::Result<Array<'js>> {
    let pairs = Array::new(ctx.clone())?;
    let mut name = String::new();
    for (i, (n, v)) in headers.iter().enumerate() {
        crate::natives::canonical_into(n, &mut name);
        pairs.set(2 * i, name.as_str())?;
        pairs.set(2 * i + 1, v.as_str())?;
    }
    Ok(pairs)
}

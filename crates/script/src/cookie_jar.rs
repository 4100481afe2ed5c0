//! k6's cookie jars (`http.cookieJar()`, `new http.CookieJar()`, `params.jar`)
//! kept in Rust: each jar is a QuickJS object owning a [`ScriptJar`] (pado's
//! VU cookie store keyed by host name, with k6's domain, path, expiry and
//! secure rules), freed by the garbage collector with the last reference to
//! it. A request hands its jar to the VU's task (which reads and fills it as
//! it sends and follows redirects) and gets it back with the answer, so no
//! jar is shared between threads and nothing is locked. `js/body.js` builds
//! k6's `CookieJar` on the natives here.

use std::cell::Cell;
use std::time::SystemTime;

use pado_engine::cookies::{parse_cookie_date, JarCookie, ScriptJar};
use rquickjs::class::{JsClass, Trace, Tracer, Writable};
use rquickjs::function::{Constructor, Opt};
use rquickjs::{Class, Ctx, Exception, Function, JsLifetime, Object, Value};

thread_local! {
    /// The next jar's number (jars are told apart by it when a batch shares one).
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// A cookie jar as JavaScript holds it: its number and its cookies.
pub(crate) struct JarHandle {
    /// Unique on this thread: the same jar given to several requests of one
    /// batch is handed over once.
    pub(crate) id: u64,
    /// The cookies (empty while a request has them).
    pub(crate) jar: ScriptJar,
}

// SAFETY: `JarHandle` holds no JavaScript values (no lifetime to change).
unsafe impl<'js> JsLifetime<'js> for JarHandle {
    type Changed<'to> = JarHandle;
}

impl<'js> Trace<'js> for JarHandle {
    fn trace<'a>(&self, _tracer: Tracer<'a, 'js>) {}
}

impl<'js> JsClass<'js> for JarHandle {
    const NAME: &'static str = "PadoCookieJar";
    type Mutable = Writable;

    fn constructor(_ctx: &Ctx<'js>) -> rquickjs::Result<Option<Constructor<'js>>> {
        Ok(None)
    }
}

/// The jar a request's options name (`jar`), if they name one.
pub(crate) fn jar_of<'js>(o: &rquickjs::Array<'js>) -> Option<Class<'js, JarHandle>> {
    o.get::<Option<Class<'js, JarHandle>>>(crate::natives::opt::JAR)
        .ok()
        .flatten()
}

/// Take `h`'s cookies for a request (given back by [`put`]).
pub(crate) fn take(h: &Class<'_, JarHandle>) -> ScriptJar {
    std::mem::take(&mut h.borrow_mut().jar)
}

/// Give `h` its cookies back after a request.
pub(crate) fn put(h: &Class<'_, JarHandle>, jar: ScriptJar) {
    h.borrow_mut().jar = jar;
}

/// A URL a jar operation names, or an exception naming it.
fn url_of(ctx: &Ctx<'_>, text: &str) -> rquickjs::Result<url::Url> {
    url::Url::parse(text)
        .ok()
        .filter(|u| u.host_str().is_some_and(|h| !h.is_empty()))
        .ok_or_else(|| {
            Exception::throw_message(ctx, &format!("cookie jar: `{text}` is not an absolute URL"))
        })
}

/// `jar.set`'s options in k6's names: `domain`, `path`, `expires` (a date
/// string as k6 reads it, RFC 1123), `max_age`, `secure`, `http_only`.
fn options<'js>(ctx: &Ctx<'js>, o: Option<Object<'js>>) -> rquickjs::Result<JarCookie> {
    let mut c = JarCookie::default();
    let Some(o) = o else {
        return Ok(c);
    };
    for k in o.keys::<String>() {
        let k = k?;
        let v: Value<'js> = o.get(&k)?;
        if v.is_undefined() || v.is_null() {
            continue;
        }
        let text = || crate::natives::text_of(ctx, v.clone());
        match k.to_ascii_lowercase().as_str() {
            "domain" => c.domain = Some(text()?),
            "path" => c.path = Some(text()?),
            "expires" => {
                let t = text()?;
                if !t.is_empty() {
                    c.expires = Some(parse_cookie_date(&t).ok_or_else(|| {
                        Exception::throw_message(
                            ctx,
                            &format!(
                                "cookie jar: unable to parse \"expires\" date string \"{t}\" \
                                 (k6's form: Mon, 02 Jan 2006 15:04:05 GMT)"
                            ),
                        )
                    })?);
                }
            }
            "max_age" => c.max_age = v.as_number().unwrap_or(0.0) as i64,
            "secure" => c.secure = truthy(&v),
            "http_only" => c.http_only = truthy(&v),
            _ => {}
        }
    }
    Ok(c)
}

/// JavaScript's truthiness of a value k6 reads as a boolean.
fn truthy(v: &Value<'_>) -> bool {
    if let Some(b) = v.as_bool() {
        b
    } else if let Some(n) = v.as_number() {
        n != 0.0 && !n.is_nan()
    } else if let Some(s) = v.as_string() {
        s.to_string().is_ok_and(|s| !s.is_empty())
    } else {
        v.is_object()
    }
}

/// Install the jar natives on `p`: `jarNew()`, `jarFor(jar, url)` (name →
/// values), `jarSet(jar, url, name, value, options)`, `jarClear(jar, url)`,
/// `jarDelete(jar, url, name)` and `jarReset(jar)` (every cookie gone).
pub(crate) fn install<'js>(ctx: &Ctx<'js>, p: &Object<'js>) -> rquickjs::Result<()> {
    p.set(
        "jarNew",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>| -> rquickjs::Result<Class<'js, JarHandle>> {
                let id = NEXT_ID.with(|n| {
                    let id = n.get();
                    n.set(id + 1);
                    id
                });
                Class::instance(
                    ctx,
                    JarHandle {
                        id,
                        jar: ScriptJar::default(),
                    },
                )
            },
        )?,
    )?;
    p.set(
        "jarFor",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             h: Class<'js, JarHandle>,
             url: String|
             -> rquickjs::Result<Object<'js>> {
                let u = url_of(&ctx, &url)?;
                let out = Object::new(ctx.clone())?;
                let held = h.borrow();
                for (name, value) in held.jar.cookies_for(&u) {
                    let list: rquickjs::Array<'js> =
                        match out.get::<_, Option<rquickjs::Array<'js>>>(name)? {
                            Some(a) => a,
                            None => {
                                let a = rquickjs::Array::new(ctx.clone())?;
                                out.set(name, a.clone())?;
                                a
                            }
                        };
                    list.set(list.len(), value)?;
                }
                Ok(out)
            },
        )?,
    )?;
    p.set(
        "jarSet",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             h: Class<'js, JarHandle>,
             url: String,
             name: String,
             value: String,
             o: Opt<Value<'js>>|
             -> rquickjs::Result<()> {
                let u = url_of(&ctx, &url)?;
                let c = options(&ctx, o.0.and_then(Value::into_object))?;
                h.borrow_mut()
                    .jar
                    .set(&u, &name, &value, &c, SystemTime::now());
                Ok(())
            },
        )?,
    )?;
    p.set(
        "jarClear",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, h: Class<'js, JarHandle>, url: String| -> rquickjs::Result<()> {
                let u = url_of(&ctx, &url)?;
                h.borrow_mut().jar.clear_url(&u);
                Ok(())
            },
        )?,
    )?;
    p.set(
        "jarDelete",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             h: Class<'js, JarHandle>,
             url: String,
             name: String|
             -> rquickjs::Result<()> {
                let u = url_of(&ctx, &url)?;
                h.borrow_mut().jar.delete_url(&u, &name);
                Ok(())
            },
        )?,
    )?;
    p.set(
        "jarReset",
        Function::new(ctx.clone(), |h: Class<'js, JarHandle>| {
            h.borrow_mut().jar.clear_all();
        })?,
    )?;
    Ok(())
}

//! The few native functions under the k6 modules (`globalThis.__pado`): each one
//! that needs the outside world (a request, a sleep) suspends the VU's
//! coroutine with a [`ScriptCall`] and returns what its task answers; a check
//! or a metric add, which needs no answer, is kept for the task until then
//! ([`record`]).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use corosensei::Yielder;
use pado_engine::script::{ScriptCall, ScriptReply, ScriptRequest};
use rquickjs::function::Opt;
use rquickjs::{qjs, Array, ArrayBuffer, Ctx, Exception, Function, Object, Value};

use crate::host::Shared;
use crate::response_obj::{self, RequestShown, ShownHeaders};

/// The yielder of the coroutine running on this thread now (null outside one).
pub(crate) type VuYielder = Yielder<ScriptReply, ScriptCall>;

thread_local! {
    pub(crate) static CURRENT: Cell<*const VuYielder> = const { Cell::new(std::ptr::null()) };
    /// The checks and metric adds the running coroutine made since it last
    /// suspended (see [`record`]).
    static RECORDS: RefCell<Vec<ScriptCall>> = const { RefCell::new(Vec::new()) };
}

/// Set (or clear, with null) the coroutine whose natives run on this thread.
pub(crate) fn set_current(y: *const VuYielder) {
    CURRENT.with(|c| c.set(y));
}

/// Hand `call` to the VU's task and wait (suspended) for its answer; an error
/// outside a VU (the init code that reads the options, which may not send).
pub(crate) fn suspend(ctx: &Ctx<'_>, call: ScriptCall) -> rquickjs::Result<ScriptReply> {
    let y = CURRENT.with(Cell::get);
    if y.is_null() {
        return Err(Exception::throw_message(
            ctx,
            "requests, sleeps and checks are made by VUs, not by the script's init code",
        ));
    }
    // SAFETY: set by the coroutine that is running this very call, whose yielder
    // lives as long as it does; set again after the suspension, when another
    // coroutine may have run on this thread.
    let reply = crate::rt_switch::suspend(ctx, unsafe { &*y }, call);
    if matches!(reply, ScriptReply::Stop) {
        return Err(Exception::throw_message(ctx, "the run is stopping"));
    }
    Ok(reply)
}

/// Keep `call` (a check or a metric add: the engine answers them with
/// nothing) for the engine, which gets it just before the VU's next call
/// ([`take_records`]): the coroutine goes on instead of suspending for it, two
/// switches and the runtime's state handed over and back saved per check. An
/// error outside a VU, as [`suspend`]'s.
pub(crate) fn record(ctx: &Ctx<'_>, call: ScriptCall) -> rquickjs::Result<()> {
    if CURRENT.with(Cell::get).is_null() {
        return Err(Exception::throw_message(
            ctx,
            "requests, sleeps and checks are made by VUs, not by the script's init code",
        ));
    }
    RECORDS.with(|r| r.borrow_mut().push(call));
    Ok(())
}

/// Move the checks and metric adds made since the last call into `out`, in
/// the order they were made: called as the coroutine that made them has just
/// suspended (or returned), before another runs on this thread.
pub(crate) fn take_records(out: &mut VecDeque<ScriptCall>) {
    RECORDS.with(|r| out.extend(r.borrow_mut().drain(..)));
}

/// Install `globalThis.__pado` for a VU of `shared`'s script in scenario `scenario`.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    shared: &Arc<Shared>,
    scenario: &str,
) -> rquickjs::Result<()> {
    let p = Object::new(ctx.clone())?;
    p.set("scenario", scenario)?;
    p.set(
        "request",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             method: rquickjs::String<'js>,
             url: rquickjs::String<'js>,
             body: Value<'js>,
             o: Array<'js>,
             shape: Array<'js>| { request(&ctx, [method, url], body, o, &shape) },
        )?,
    )?;
    p.set(
        "sleep",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, s: f64| -> rquickjs::Result<()> {
                let d = Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::ZERO);
                suspend(&ctx, ScriptCall::Sleep(d)).map(|_| ())
            },
        )?,
    )?;
    p.set(
        "check",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, name: String, ok: bool| -> rquickjs::Result<()> {
                record(&ctx, ScriptCall::Check { name, ok })
            },
        )?,
    )?;
    p.set(
        "checkPlain",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, val: Value<'js>, sets: Object<'js>| -> rquickjs::Result<bool> {
                check_plain(&ctx, val, &sets)
            },
        )?,
    )?;
    p.set(
        "require",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, name: String| -> rquickjs::Result<Object<'js>> {
                // A module loaded on first use (`k6/html` for `res.html()`):
                // its namespace, the script's own promise jobs left waiting.
                crate::rt_switch::with_own_jobs(&ctx, || {
                    rquickjs::Module::import(&ctx, name)?.finish::<Object<'js>>()
                })
            },
        )?,
    )?;
    install_metrics(ctx, &p, shared, scenario)?;
    let test_tags = p.contains_key("tags")?;
    crate::request_plain::install(ctx, &p, test_tags)?;
    crate::natives_exec::install(ctx, &p)?;
    let start = Instant::now();
    p.set(
        "now",
        Function::new(ctx.clone(), move || start.elapsed().as_secs_f64() * 1000.0)?,
    )?;
    let file = shared.file.clone();
    p.set(
        "log",
        Function::new(ctx.clone(), move |level: String, text: String| {
            // To stderr, marked as the script's, never mixed into pado's stdout.
            eprintln!("{file}: console.{level}: {text}");
        })?,
    )?;
    let s = shared.clone();
    p.set(
        "open",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, path: String, mode: Opt<String>| -> rquickjs::Result<Value<'js>> {
                let bytes = s
                    .open(&path)
                    .map_err(|e| Exception::throw_message(&ctx, &e))?;
                if mode.0.as_deref() == Some("b") {
                    Ok(crate::lazy_builtins::array_buffer(&ctx, bytes.to_vec())?.into_value())
                } else {
                    let text = String::from_utf8_lossy(&bytes).into_owned();
                    Ok(rquickjs::String::from_str(ctx.clone(), &text)?.into_value())
                }
            },
        )?,
    )?;
    p.set(
        "b64encode",
        Function::new(ctx.clone(), |text: String, enc: Opt<String>| {
            engine(enc.0.as_deref()).encode(text.as_bytes())
        })?,
    )?;
    p.set(
        "b64decode",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, text: String, enc: Opt<String>| -> rquickjs::Result<String> {
                let b = engine(enc.0.as_deref())
                    .decode(text.trim_end_matches('=').as_bytes())
                    .map_err(|e| Exception::throw_message(&ctx, &format!("b64decode: {e}")))?;
                Ok(String::from_utf8_lossy(&b).into_owned())
            },
        )?,
    )?;
    ctx.globals().set("__pado", p)?;
    Ok(())
}

/// k6's `check(val, sets)` as most scripts call it (no tags, outside any
/// group: `js/k6.js` takes every other call): each own enumerable property of
/// `sets` in `Object.keys`'s order, a function called with `val` (its `this`
/// undefined) and anything else taken as it is, counted as a check named by
/// its key if truthy; whether all were. One native call instead of the
/// interpreted loop, `Object.keys`'s array and a native call per check (~19,000
/// instructions a check, of which `Object.keys` ~5,500 and the call ~4,700). An
/// exception in a check's function ends the call, the checks before it
/// counted, as k6's.
fn check_plain<'js>(ctx: &Ctx<'js>, val: Value<'js>, sets: &Object<'js>) -> rquickjs::Result<bool> {
    let mut all = true;
    // The names as they are now (a function that adds one is not run for it).
    for name in sets.keys::<rquickjs::Atom<'js>>() {
        let name = name?;
        let f: Value<'js> = sets.get(name.clone())?;
        let v = match f.as_function() {
            Some(f) => f.call::<_, Value<'js>>((val.clone(),))?,
            None => f,
        };
        // SAFETY: a live context and a value of it; `JS_ToBool` reads it only.
        let ok = unsafe { qjs::JS_ToBool(ctx.as_raw().as_ptr(), v.as_raw()) } > 0;
        record(
            ctx,
            ScriptCall::Check {
                name: name.to_string()?,
                ok,
            },
        )?;
        all &= ok;
    }
    Ok(all)
}

/// Add to `globalThis.__pado` the natives only `module` (one of pado's k6
/// modules) calls, as a VU's context loads it: a VU pays for the natives of
/// the modules its script imports, not of every module.
pub(crate) fn install_for_module<'js>(
    ctx: &Ctx<'js>,
    shared: &Arc<Shared>,
    module: &str,
) -> rquickjs::Result<()> {
    let Ok(p) = ctx.globals().get::<_, Object<'js>>("__pado") else {
        return Ok(());
    };
    match module {
        "k6/crypto" => crate::crypto::install(ctx, &p),
        "k6/html" => crate::html::install(ctx, &p),
        // `k6/http`'s cookie jars and batches (imported by it alone).
        crate::host::INTERNAL_BODY => {
            crate::cookie_jar::install(ctx, &p)?;
            crate::batch::install(ctx, &p)
        }
        // Its files and forms (loaded by it on first use).
        crate::host::INTERNAL_FORMS => crate::multipart::install(ctx, &p),
        "k6/execution" => crate::natives_exec::install(ctx, &p),
        "k6/data" => crate::natives_shared::install(ctx, &p, shared),
        "k6/ws"
        | "k6/websockets"
        | "k6/experimental/websockets"
        | "k6/net/grpc"
        | "k6/experimental/csv"
            if !p.contains_key("wsOpen")? =>
        {
            crate::net::install(ctx, &p, shared)
        }
        _ => Ok(()),
    }
}

/// `__pado.tags` (the test's tags of this scenario), `__pado.metricId` (a
/// metric declared: its number, or k6's reason to refuse it) and
/// `__pado.metric(id, value, tags)` (an add, handed to the VU's task).
fn install_metrics<'js>(
    ctx: &Ctx<'js>,
    p: &Object<'js>,
    shared: &Arc<Shared>,
    scenario: &str,
) -> rquickjs::Result<()> {
    // None at all when the test has no tags: each request, check and add reads
    // it, and an empty object would still be walked every time.
    if let Some(tags) = shared.tags.get().map(|t| t.of(scenario)) {
        if !tags.is_empty() {
            let json = serde_json::Value::Object(tags).to_string();
            p.set("tags", ctx.json_parse(json)?)?;
        }
    }
    let s = shared.clone();
    p.set(
        "metricId",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, kind: String, time: bool| -> rquickjs::Result<u32> {
                s.metrics
                    .declare(&name, &kind, time)
                    .map_err(|e| Exception::throw_message(&ctx, &e))
            },
        )?,
    )?;
    p.set(
        "metric",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, id: u32, value: f64, tags: Opt<Object<'js>>| -> rquickjs::Result<()> {
                let tags = match tags.0 {
                    Some(o) => tag_pairs(&ctx, &o)?,
                    None => Vec::new(),
                };
                // Outside a VU (the init code that reads the options) an add
                // has nowhere to go: k6 refuses it there too.
                let at = Instant::now();
                record(
                    &ctx,
                    ScriptCall::Metric {
                        id,
                        value,
                        tags,
                        at,
                    },
                )
            },
        )?,
    )?;
    Ok(())
}

/// k6's base64 variants (`std`, `rawstd`, `url`, `rawurl`); decoding accepts
/// padding or none.
fn engine(name: Option<&str>) -> base64::engine::GeneralPurpose {
    use base64::engine::{general_purpose as gp, DecodePaddingMode, GeneralPurposeConfig};
    let lenient =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    match name {
        Some("rawstd") => {
            base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, gp::NO_PAD)
        }
        Some("url") => base64::engine::GeneralPurpose::new(
            &base64::alphabet::URL_SAFE,
            lenient.with_encode_padding(true),
        ),
        Some("rawurl") => base64::engine::GeneralPurpose::new(
            &base64::alphabet::URL_SAFE,
            lenient.with_encode_padding(false),
        ),
        _ => base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            lenient.with_encode_padding(true),
        ),
    }
}

/// Where each of a request's options sits in the array `js/http.js`'s
/// `prepare` gives `__pado.request` and `__pado.batch` (the same order there):
/// read by index, so no property name is looked up per request.
pub(crate) mod opt {
    /// The headers, an object (name → value).
    pub(crate) const HEADERS: usize = 0;
    /// The timeout in milliseconds.
    pub(crate) const TIMEOUT: usize = 1;
    /// The series' name (k6's `name` tag).
    pub(crate) const NAME: usize = 2;
    /// The group's path.
    pub(crate) const GROUP: usize = 3;
    /// The series' other tags, an object.
    pub(crate) const TAGS: usize = 4;
    /// How many redirects to follow.
    pub(crate) const REDIRECTS: usize = 5;
    /// k6's `responseType`.
    pub(crate) const RESPONSE_TYPE: usize = 6;
    /// The expected statuses, `[[min, max]...]`.
    pub(crate) const EXPECTED: usize = 7;
    /// `params.cookies` as `[name, value, "replace" or ""]` each.
    pub(crate) const COOKIES: usize = 8;
    /// The cookie jar's handle.
    pub(crate) const JAR: usize = 9;
}

/// `__pado.request(method, url, body, options, shape)`: the request sent by
/// the VU's task (its jar handed over for the exchange and given back with the
/// answer), the answer made the script's `Response` ([`response_obj::make`],
/// `shape` as `js/http.js` lays it out).
fn request<'js>(
    ctx: &Ctx<'js>,
    [method, url]: [rquickjs::String<'js>; 2],
    body: Value<'js>,
    o: Array<'js>,
    shape: &Array<'js>,
) -> rquickjs::Result<Object<'js>> {
    let mut req = build_request(ctx, method.to_string()?, url.to_string()?, body.clone(), &o)?;
    let jar = crate::cookie_jar::jar_of(&o);
    if let Some(j) = &jar {
        req.jar = Some(Box::new(crate::cookie_jar::take(j)));
    }
    match suspend(ctx, ScriptCall::Http(Box::new(req)))? {
        ScriptReply::Http(mut r) => {
            if let (Some(j), Some(back)) = (&jar, r.jar.take()) {
                crate::cookie_jar::put(j, *back);
            }
            let shown = RequestShown {
                method: method.into_value(),
                url: url.into_value(),
                headers: ShownHeaders::Object(o.get(opt::HEADERS)?),
                body,
            };
            response_obj::make(ctx, &mut r, shape, shown)
        }
        _ => Err(Exception::throw_message(ctx, "no answer to a request")),
    }
}

/// A request as the engine takes it, from what `js/http.js` gives (its jar
/// aside: the caller hands it over); `o` the options as [`opt`] places them.
pub(crate) fn build_request<'js>(
    ctx: &Ctx<'js>,
    method: String,
    url: String,
    body: Value<'js>,
    o: &Array<'js>,
) -> rquickjs::Result<ScriptRequest> {
    let mut req = ScriptRequest {
        method,
        url,
        keep_body: true,
        ..ScriptRequest::default()
    };
    if let Some(b) = body.as_string() {
        req.body = b.to_string()?.into_bytes();
    } else if let Some(ab) = body
        .as_object()
        .and_then(|o| ArrayBuffer::from_object(o.clone()))
    {
        req.body = ab.as_bytes().unwrap_or_default().to_vec();
    }
    if let Ok(h) = o.get::<Object<'js>>(opt::HEADERS) {
        // A value as the script gave it: an entity tag's quotes are its own.
        for kv in h.props::<String, Value<'js>>() {
            let (k, v) = kv?;
            req.headers.push((k, text_of(ctx, v)?));
        }
    }
    if let Ok(Some(ms)) = o.get::<Option<f64>>(opt::TIMEOUT) {
        req.timeout = Duration::try_from_secs_f64(ms.max(0.0) / 1000.0).ok();
    }
    if let Ok(Some(n)) = o.get::<Option<String>>(opt::NAME) {
        req.name = Some(n);
    }
    if let Ok(Some(g)) = o.get::<Option<String>>(opt::GROUP) {
        req.group = Some(g);
    }
    if let Ok(Some(t)) = o.get::<Option<Object<'js>>>(opt::TAGS) {
        req.tags = tag_pairs(ctx, &t)?;
    }
    if let Ok(Some(r)) = o.get::<Option<f64>>(opt::REDIRECTS) {
        req.redirects = Some(r.max(0.0) as u32);
    }
    if let Ok(Some(t)) = o.get::<Option<String>>(opt::RESPONSE_TYPE) {
        req.keep_body = t != "none";
    }
    if let Ok(Some(list)) = o.get::<Option<Vec<Vec<String>>>>(opt::COOKIES) {
        // `[name, value, "replace" or ""]` each (js/body.js).
        req.cookies = list
            .into_iter()
            .filter_map(|c| match <[String; 3]>::try_from(c) {
                Ok([name, value, replace]) => Some(pado_engine::script::RequestCookie {
                    name,
                    value,
                    replace: replace == "replace",
                }),
                Err(_) => None,
            })
            .collect();
    }
    if let Ok(Some(ranges)) = o.get::<Option<Vec<Vec<f64>>>>(opt::EXPECTED) {
        req.expected = Some(
            ranges
                .iter()
                .filter(|r| r.len() == 2)
                .map(|r| (r[0] as u16, r[1] as u16))
                .collect(),
        );
    }
    Ok(req)
}

/// A tags object's pairs, each value as text (k6 sends numbers and booleans as
/// their text); an undefined or null value is no tag.
fn tag_pairs<'js>(ctx: &Ctx<'js>, o: &Object<'js>) -> rquickjs::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for k in o.keys::<String>() {
        let k = k?;
        let v: Value<'js> = o.get(&k)?;
        if v.is_undefined() || v.is_null() {
            continue;
        }
        let text = text_of(ctx, v)?;
        out.push((k, text));
    }
    Ok(out)
}

/// A header's name as k6 shows it (Go's canonical form: each part between
/// hyphens capitalised, the rest lower case), into `out`.
pub(crate) fn canonical_into(name: &str, out: &mut String) {
    out.clear();
    if name.is_ascii() {
        // The usual case, a byte at a time.
        let mut first = true;
        for b in name.bytes() {
            out.push(if first {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            } as char);
            first = b == b'-';
        }
        return;
    }
    let mut first = true;
    for c in name.chars() {
        if c == '-' {
            out.push(c);
            first = true;
        } else if first {
            out.extend(c.to_uppercase());
            first = false;
        } else {
            out.extend(c.to_lowercase());
        }
    }
}

/// A JavaScript value as the text k6 sends for it (a header's or a tag's value): a
/// string as it is, anything else as its JSON.
pub(crate) fn text_of<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> rquickjs::Result<String> {
    match v.as_string() {
        Some(s) => s.to_string(),
        None => Ok(ctx
            .json_stringify(v)?
            .map(|s| s.to_string())
            .transpose()?
            .unwrap_or_default()),
    }
}

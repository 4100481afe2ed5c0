//! k6's request as most scripts make it, prepared in Rust.
//!
//! `js/http.js`'s `prepare` reads every option a request may have (tags,
//! cookies, a timeout, redirects, a response type, expected statuses, a jar,
//! forms, credentials in the URL), copies the headers (`Object.assign`),
//! upper-cases the method and hands all of it over in an array that the native
//! reads back: ~33,000 interpreted instructions a request (a loop of 20,000 of
//! its calls under callgrind), a third of the load worker's. Most requests
//! have none of those options: a text URL without credentials, a text body or
//! none, and parameters with headers at most. [`request_plain`] makes that
//! request straight from the script's values and answers `undefined` for
//! anything else, which `prepare` then makes as before: the request sent and
//! the `Response` (with the request it shows) are the same either way
//! (`tests_request_plain`).

use rquickjs::{Array, Class, Ctx, Function, Object, Value};

use pado_engine::script::{ScriptCall, ScriptReply, ScriptRequest};

use crate::cookie_jar::{self, JarHandle};
use crate::natives::{suspend, text_of};
use crate::response_obj::{self, RequestShown, ShownHeaders};

/// Where `js/http.js`'s `SHAPE` holds the VU's own cookie jar (the jar of a
/// request whose parameters name none).
pub(crate) const VU_JAR: usize = 2;

/// Install `__pado.requestPlain(method, url, body, params, group, shape)`.
/// With test-wide tags (`test_tags`) every request's series carries them:
/// `prepare` makes those.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    p: &Object<'js>,
    test_tags: bool,
) -> rquickjs::Result<()> {
    p.set(
        "requestPlain",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  method: Value<'js>,
                  url: Value<'js>,
                  body: Value<'js>,
                  params: Value<'js>,
                  group: Value<'js>,
                  shape: Array<'js>|
                  -> rquickjs::Result<Value<'js>> {
                if test_tags {
                    return Ok(Value::new_undefined(ctx));
                }
                let call = [method, url, body, params, group];
                request_plain(&ctx, call, &shape)
            },
        )?,
    )
}

/// What a plain request is made of, read from the script's values.
struct Plain<'js> {
    req: ScriptRequest,
    /// The method as shown (the script's own string when already upper case).
    method: Value<'js>,
    url: Value<'js>,
    /// The body as shown: the script's text, or `""` for none.
    body: Value<'js>,
    headers: Vec<(String, Value<'js>)>,
}

/// The request `[method, url, body, params, group]` sent and its `Response`,
/// or `undefined` when it is not a plain one (for `prepare`).
fn request_plain<'js>(
    ctx: &Ctx<'js>,
    call: [Value<'js>; 5],
    shape: &Array<'js>,
) -> rquickjs::Result<Value<'js>> {
    let Some(plain) = read(ctx, call, shape)? else {
        return Ok(Value::new_undefined(ctx.clone()));
    };
    let Plain {
        mut req,
        method,
        url,
        body,
        headers,
    } = plain;
    let jar: Option<Class<'js, JarHandle>> = shape.get(VU_JAR)?;
    if let Some(j) = &jar {
        req.jar = Some(Box::new(cookie_jar::take(j)));
    }
    match suspend(ctx, ScriptCall::Http(Box::new(req)))? {
        ScriptReply::Http(mut r) => {
            if let (Some(j), Some(back)) = (&jar, r.jar.take()) {
                cookie_jar::put(j, *back);
            }
            let shown = RequestShown {
                method,
                url,
                headers: ShownHeaders::Pairs(headers),
                body,
            };
            Ok(response_obj::make(ctx, &mut r, shape, shown)?.into_value())
        }
        _ => Err(rquickjs::Exception::throw_message(
            ctx,
            "no answer to a request",
        )),
    }
}

/// [`Plain`] of `[method, url, body, params, group]`, or `None` when the
/// request needs `prepare`. Nothing the script can see is changed before it
/// says so: only `params.headers` is read (its getter, if it has one, once
/// more by `prepare` when the headers are not an object).
fn read<'js>(
    ctx: &Ctx<'js>,
    [method, url, body, params, group]: [Value<'js>; 5],
    shape: &Array<'js>,
) -> rquickjs::Result<Option<Plain<'js>>> {
    let (Some(m), Some(u)) = (method.as_string(), url.as_string()) else {
        return Ok(None);
    };
    let m_text = m.to_string()?;
    let u_text = u.to_string()?;
    // JavaScript's upper case is Unicode's; ASCII's only for ASCII.
    if !m_text.is_ascii() || u_text.contains('@') {
        return Ok(None);
    }
    let (sent, body_shown) = if body.is_undefined() || body.is_null() {
        (
            Vec::new(),
            rquickjs::String::from_str(ctx.clone(), "")?.into_value(),
        )
    } else if let Some(b) = body.as_string() {
        (b.to_string()?.into_bytes(), body)
    } else {
        return Ok(None);
    };
    let headers = match params_headers(&params, shape)? {
        Some(h) => h,
        None => return Ok(None),
    };
    let upper = m_text.to_ascii_uppercase();
    let method = if upper == m_text {
        method
    } else {
        rquickjs::String::from_str(ctx.clone(), &upper)?.into_value()
    };
    let mut req = ScriptRequest {
        method: upper,
        url: u_text,
        body: sent,
        keep_body: true,
        ..ScriptRequest::default()
    };
    if let Some(g) = group.as_string() {
        let g = g.to_string()?;
        if !g.is_empty() {
            req.group = Some(g);
        }
    }
    req.headers.reserve(headers.len());
    for (k, v) in &headers {
        req.headers.push((k.clone(), text_of(ctx, v.clone())?));
    }
    Ok(Some(Plain {
        req,
        method,
        url,
        body: body_shown,
        headers,
    }))
}

/// The headers of `params` (own enumerable ones, in order, as
/// `Object.assign` copies them), when `params` is none or an object of
/// `Object.prototype` with no property but `headers`, itself none or an
/// object; else `None`.
fn params_headers<'js>(
    params: &Value<'js>,
    shape: &Array<'js>,
) -> rquickjs::Result<Option<Vec<(String, Value<'js>)>>> {
    if params.is_undefined() || params.is_null() {
        return Ok(Some(Vec::new()));
    }
    let Some(p) = params.as_object() else {
        return Ok(None);
    };
    // An option inherited from another prototype is read by `prepare`:
    // `Response.prototype`'s own prototype is this context's
    // `Object.prototype`.
    let response_proto: Object<'js> = shape.get(0)?;
    if p.get_prototype() != response_proto.get_prototype() {
        return Ok(None);
    }
    for k in p.keys::<String>() {
        if k? != "headers" {
            return Ok(None);
        }
    }
    let h: Value<'js> = p.get("headers")?;
    if h.is_undefined() || h.is_null() {
        return Ok(Some(Vec::new()));
    }
    let Some(h) = h.as_object() else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for kv in h.props::<String, Value<'js>>() {
        out.push(kv?);
    }
    Ok(Some(out))
}

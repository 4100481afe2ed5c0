//! The natives under `k6/ws`, `k6/websockets` and `k6/net/grpc`
//! (`__pado.ws*`, `__pado.grpc*`): each suspends the VU's coroutine with a
//! [`ScriptCall::Ws`] or [`ScriptCall::Grpc`] and the VU's task does the I/O on
//! pado's own clients. The JavaScript objects, handlers and event loops are in
//! `js/ws.js`, `js/websockets.js` and `js/grpc.js`.

use std::sync::Arc;
use std::time::Duration;

use pado_engine::script::{
    ScriptCall, ScriptReply, ScriptWsCall, ScriptWsEventKind, ScriptWsOpen, ScriptWsReply,
};
use rquickjs::function::Opt;
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Value};

use crate::grpc;
use crate::host::Shared;
use crate::natives::suspend;

/// Add the WebSocket, gRPC and CSV natives to `p` (`globalThis.__pado`).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    p: &Object<'js>,
    shared: &Arc<Shared>,
) -> rquickjs::Result<()> {
    p.set(
        "wsOpen",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             url: String,
             headers: Opt<Object<'js>>,
             name: Opt<Option<String>>,
             group: Opt<Option<String>>| {
                ws_open(&ctx, url, headers.0, name.0.flatten(), group.0.flatten())
            },
        )?,
    )?;
    p.set(
        "wsSend",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, id: u32, data: Value<'js>| -> rquickjs::Result<String> {
                let (data, binary) = match data.as_string() {
                    Some(s) => (s.to_string()?.into_bytes(), false),
                    None => match data
                        .as_object()
                        .and_then(|o| ArrayBuffer::from_object(o.clone()))
                    {
                        Some(ab) => (ab.as_bytes().unwrap_or_default().to_vec(), true),
                        None => {
                            return Err(Exception::throw_type(
                                &ctx,
                                "a message is a string or an ArrayBuffer",
                            ))
                        }
                    },
                };
                ws_simple(&ctx, ScriptWsCall::Send { id, data, binary })
            },
        )?,
    )?;
    p.set(
        "wsPing",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, id: u32| {
            ws_simple(&ctx, ScriptWsCall::Ping { id })
        })?,
    )?;
    p.set(
        "wsClose",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, id: u32, code: u16| {
            ws_simple(&ctx, ScriptWsCall::Close { id, code })
        })?,
    )?;
    p.set(
        "wsWait",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, ms: f64| ws_wait(&ctx, ms))?,
    )?;
    install_grpc(ctx, p, shared)?;
    crate::grpc_stream::install(ctx, p)?;
    p.set(
        "csvRows",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, data: Value<'js>, delimiter: String| -> rquickjs::Result<Value<'js>> {
                let bytes = match data
                    .as_object()
                    .and_then(|o| ArrayBuffer::from_object(o.clone()))
                {
                    Some(ab) => ab.as_bytes().unwrap_or_default().to_vec(),
                    None => match data.as_string() {
                        Some(s) => s.to_string()?.into_bytes(),
                        None => return Err(Exception::throw_type(&ctx, "csv: not a file's data")),
                    },
                };
                let rows = crate::csv::rows(&bytes, &delimiter)
                    .map_err(|e| Exception::throw_message(&ctx, &e))?;
                let json = serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into());
                ctx.json_parse(json)
            },
        )?,
    )?;
    Ok(())
}

/// Add the `k6/net/grpc` natives of descriptors, keys and unary calls to `p`.
fn install_grpc<'js>(
    ctx: &Ctx<'js>,
    p: &Object<'js>,
    shared: &Arc<Shared>,
) -> rquickjs::Result<()> {
    let s = shared.clone();
    p.set(
        "grpcLoad",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  imports: Vec<String>,
                  files: Vec<String>|
                  -> rquickjs::Result<u32> {
                grpc::load(&s.base_dir, &imports, &files)
                    .map_err(|e| Exception::throw_message(&ctx, &e.to_string()))
            },
        )?,
    )?;
    p.set(
        "tlsKey",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, key: String, password: String| -> rquickjs::Result<String> {
                crate::tls_key::decrypt(&key, &password).map_err(|e| {
                    Exception::throw_message(
                        &ctx,
                        &format!("invalid grpc.connect() parameters: {e}"),
                    )
                })
            },
        )?,
    )?;
    let s = shared.clone();
    p.set(
        "grpcLoadProtoset",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, path: String| -> rquickjs::Result<u32> {
                grpc::load_protoset(&s.base_dir, &path)
                    .map_err(|e| Exception::throw_message(&ctx, &e.to_string()))
            },
        )?,
    )?;
    p.set(
        "grpcInvoke",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, set: u32, method: String, json: String, o: Object<'js>| {
                grpc_invoke(&ctx, set, &method, &json, &o)
            },
        )?,
    )?;
    p.set(
        "grpcHasMethod",
        Function::new(ctx.clone(), |set: u32, method: String| {
            grpc::method(set, &method).is_ok()
        })?,
    )?;
    Ok(())
}

/// A WebSocket call whose answer is done or failed: the error in words, or "".
fn ws_simple(ctx: &Ctx<'_>, call: ScriptWsCall) -> rquickjs::Result<String> {
    match suspend(ctx, ScriptCall::Ws(call))? {
        ScriptReply::Ws(ScriptWsReply::Failed { error, .. }) => Ok(error),
        ScriptReply::Ws(_) => Ok(String::new()),
        _ => Err(Exception::throw_message(
            ctx,
            "no answer to a WebSocket call",
        )),
    }
}

/// `__pado.wsOpen(url, headers, name, group)`: `{ id, status, headers, error }`.
fn ws_open<'js>(
    ctx: &Ctx<'js>,
    url: String,
    headers: Option<Object<'js>>,
    name: Option<String>,
    group: Option<String>,
) -> rquickjs::Result<Object<'js>> {
    let mut open = ScriptWsOpen {
        url,
        name,
        group: group.filter(|g| !g.is_empty()),
        ..ScriptWsOpen::default()
    };
    if let Some(h) = headers {
        for k in h.keys::<String>() {
            let k = k?;
            let v: Value<'js> = h.get(&k)?;
            open.headers.push((k, crate::natives::text_of(ctx, v)?));
        }
    }
    let o = Object::new(ctx.clone())?;
    let headers_of = |h: &[(String, String)]| -> rquickjs::Result<Object<'js>> {
        let ho = Object::new(ctx.clone())?;
        for (k, v) in h {
            ho.set(canonical(k), v.as_str())?;
        }
        Ok(ho)
    };
    match suspend(ctx, ScriptCall::Ws(ScriptWsCall::Open(Box::new(open))))? {
        ScriptReply::Ws(ScriptWsReply::Opened {
            id,
            status,
            headers,
        }) => {
            o.set("id", id)?;
            o.set("status", status)?;
            o.set("headers", headers_of(&headers)?)?;
            o.set("body", "")?;
            o.set("error", "")?;
        }
        ScriptReply::Ws(ScriptWsReply::Refused {
            status,
            headers,
            body,
        }) => {
            // k6's response to a refused handshake: its status, headers and body.
            o.set("id", -1)?;
            o.set("status", status)?;
            o.set("headers", headers_of(&headers)?)?;
            o.set("body", String::from_utf8_lossy(&body).as_ref())?;
            o.set(
                "error",
                format!("the server answered the handshake with {status}"),
            )?;
        }
        ScriptReply::Ws(ScriptWsReply::Failed { status, error }) => {
            o.set("id", -1)?;
            o.set("status", status)?;
            o.set("headers", Object::new(ctx.clone())?)?;
            o.set("body", "")?;
            o.set("error", error)?;
        }
        _ => {
            return Err(Exception::throw_message(
                ctx,
                "no answer to a WebSocket open",
            ))
        }
    }
    Ok(o)
}

/// `__pado.wsWait(ms)` (negative: no limit): `null` when no socket is open,
/// `{ timeout: true }`, or `{ id, kind, data, code, ping }` (`ping`: for a pong
/// that answered the script's ping, the ms since it, k6's `ws_ping`; else 0).
fn ws_wait<'js>(ctx: &Ctx<'js>, ms: f64) -> rquickjs::Result<Value<'js>> {
    let timeout =
        (ms >= 0.0).then(|| Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::ZERO));
    let reply = suspend(ctx, ScriptCall::Ws(ScriptWsCall::Wait { timeout }))?;
    let o = Object::new(ctx.clone())?;
    match reply {
        ScriptReply::Ws(ScriptWsReply::Idle) => return Ok(Value::new_null(ctx.clone())),
        ScriptReply::Ws(ScriptWsReply::Event {
            id,
            kind,
            data,
            code,
            ping_us,
        }) => {
            o.set("id", id)?;
            o.set("code", code)?;
            o.set("ping", ping_us as f64 / 1000.0)?;
            let kind = match kind {
                ScriptWsEventKind::Text => "text",
                ScriptWsEventKind::Binary => "binary",
                ScriptWsEventKind::Ping => "ping",
                ScriptWsEventKind::Pong => "pong",
                ScriptWsEventKind::Close => "close",
                ScriptWsEventKind::Error => "error",
            };
            o.set("kind", kind)?;
            if kind == "binary" {
                o.set("data", crate::lazy_builtins::array_buffer(ctx, data)?)?;
            } else {
                o.set("data", String::from_utf8_lossy(&data).as_ref())?;
            }
        }
        _ => o.set("timeout", true)?,
    }
    Ok(o.into_value())
}

/// `__pado.grpcInvoke(set, method, json, { target, plaintext, tls, metadata,
/// timeout, name })`: `{ code, message, error, headers, trailers }` with the
/// reply as JSON text and the metadata maps as k6 shows them.
fn grpc_invoke<'js>(
    ctx: &Ctx<'js>,
    set: u32,
    method: &str,
    json: &str,
    o: &Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    let m = grpc::method(set, method).map_err(|e| Exception::throw_message(ctx, &e))?;
    let message = grpc::encode(&m, json).map_err(|e| Exception::throw_message(ctx, &e))?;
    let mut call = crate::grpc_stream::call_of(o)?;
    call.method = format!("/{}/{}", m.parent_service().full_name(), m.name());
    call.message = message;
    if m.is_client_streaming() || m.is_server_streaming() {
        let why = format!("{method} is a stream: open it with new grpc.Stream()");
        return Err(Exception::throw_message(ctx, &why));
    }
    let out = Object::new(ctx.clone())?;
    match suspend(ctx, ScriptCall::Grpc(Box::new(call)))? {
        ScriptReply::Grpc(r) => {
            let reply = r.messages.first().map(Vec::as_slice).unwrap_or_default();
            let json = grpc::decode(&m, reply).map_err(|e| Exception::throw_message(ctx, &e))?;
            match r.code {
                Some(c) => out.set("code", c)?,
                None => out.set("code", Value::new_null(ctx.clone()))?,
            }
            out.set("message", json)?;
            out.set("error", r.error.as_str())?;
            out.set(
                "headers",
                crate::grpc_stream::metadata_object(ctx, &r.headers)?,
            )?;
            out.set(
                "trailers",
                crate::grpc_stream::metadata_object(ctx, &r.trailers)?,
            )?;
        }
        _ => return Err(Exception::throw_message(ctx, "no answer to a gRPC call")),
    }
    Ok(out)
}

/// A header name as k6's responses show it (`Sec-Websocket-Accept`).
fn canonical(name: &str) -> String {
    name.split('-')
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + &c.as_str().to_lowercase(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn header_names_are_canonical_as_in_go() {
        assert_eq!(canonical("sec-websocket-accept"), "Sec-Websocket-Accept");
        assert_eq!(canonical("X-ROOM"), "X-Room");
    }
}

//! `k6/net/grpc`'s streams and reflection natives (`__pado.grpcStream*`,
//! `grpcReflect`, `grpcDecode`): each suspends the VU's coroutine with a
//! [`ScriptCall::GrpcStream`] and the VU's task does the I/O on pado's HTTP/2
//! client; `js/grpc.js` keeps the `Stream` objects, their handlers and the event
//! loop that runs them. Also the call options every gRPC native reads
//! ([`call_of`]) and the metadata maps as k6 shows them ([`metadata_object`]).

use std::time::Duration;

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine;

use pado_engine::script::{
    ScriptCall, ScriptGrpcCall, ScriptGrpcStreamCall, ScriptGrpcStreamReply, ScriptGrpcTls,
};
use rquickjs::{ArrayBuffer, Ctx, Exception, Function, Object, Value};

use crate::grpc;
use crate::natives::suspend;

/// Add the stream and reflection natives to `p` (`globalThis.__pado`).
pub(crate) fn install<'js>(ctx: &Ctx<'js>, p: &Object<'js>) -> rquickjs::Result<()> {
    p.set(
        "grpcStreamOpen",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, set: u32, method: String, o: Object<'js>| -> rquickjs::Result<u32> {
                let m =
                    grpc::method(set, &method).map_err(|e| Exception::throw_message(&ctx, &e))?;
                let mut call = call_of(&o)?;
                call.method = format!("/{}/{}", m.parent_service().full_name(), m.name());
                match stream_call(&ctx, ScriptGrpcStreamCall::Open(Box::new(call)))? {
                    ScriptGrpcStreamReply::Opened { id } => Ok(id),
                    ScriptGrpcStreamReply::Failed { error } => Err(Exception::throw_message(
                        &ctx,
                        &format!("failed to create a new stream: {error}"),
                    )),
                    _ => Err(no_answer(&ctx)),
                }
            },
        )?,
    )?;
    p.set(
        "grpcStreamWrite",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             id: u32,
             set: u32,
             method: String,
             json: String|
             -> rquickjs::Result<String> {
                let m =
                    grpc::method(set, &method).map_err(|e| Exception::throw_message(&ctx, &e))?;
                let message =
                    grpc::encode(&m, &json).map_err(|e| Exception::throw_message(&ctx, &e))?;
                match stream_call(&ctx, ScriptGrpcStreamCall::Write { id, message })? {
                    ScriptGrpcStreamReply::Failed { error } => Ok(error),
                    _ => Ok(String::new()),
                }
            },
        )?,
    )?;
    p.set(
        "grpcStreamEnd",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, id: u32| {
            stream_call(&ctx, ScriptGrpcStreamCall::End { id }).map(|_| ())
        })?,
    )?;
    p.set(
        "grpcStreamWait",
        Function::new(ctx.clone(), |ctx: Ctx<'js>, ms: f64| stream_wait(&ctx, ms))?,
    )?;
    p.set(
        "grpcDecode",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>,
             set: u32,
             method: String,
             data: Value<'js>|
             -> rquickjs::Result<String> {
                let m =
                    grpc::method(set, &method).map_err(|e| Exception::throw_message(&ctx, &e))?;
                let bytes = data
                    .as_object()
                    .and_then(|o| ArrayBuffer::from_object(o.clone()))
                    .and_then(|ab| ab.as_bytes().map(<[u8]>::to_vec))
                    .unwrap_or_default();
                grpc::decode(&m, &bytes).map_err(|e| Exception::throw_message(&ctx, &e))
            },
        )?,
    )?;
    p.set(
        "grpcReflect",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, o: Object<'js>| -> rquickjs::Result<u32> {
                let call = call_of(&o)?;
                match stream_call(&ctx, ScriptGrpcStreamCall::Reflect(Box::new(call)))? {
                    ScriptGrpcStreamReply::Reflected { files } => {
                        grpc::register(&files).map_err(|e| Exception::throw_message(&ctx, &e))
                    }
                    ScriptGrpcStreamReply::Failed { error } => Err(Exception::throw_message(
                        &ctx,
                        &format!("can't get the server's services by reflection: {error}"),
                    )),
                    _ => Err(no_answer(&ctx)),
                }
            },
        )?,
    )?;
    Ok(())
}

fn no_answer(ctx: &Ctx<'_>) -> rquickjs::Error {
    Exception::throw_message(ctx, "no answer to a gRPC stream call")
}

/// Suspend with a stream call; its answer.
fn stream_call(
    ctx: &Ctx<'_>,
    call: ScriptGrpcStreamCall,
) -> rquickjs::Result<ScriptGrpcStreamReply> {
    match suspend(ctx, ScriptCall::GrpcStream(call))? {
        pado_engine::script::ScriptReply::GrpcStream(r) => Ok(r),
        _ => Err(no_answer(ctx)),
    }
}

/// A call's options as `js/grpc.js` passes them: `{ target, plaintext, tls: {
/// cacerts, cert, key }, metadata: [[k, v]], timeout (ms), name, stream }`.
pub(crate) fn call_of(o: &Object<'_>) -> rquickjs::Result<ScriptGrpcCall> {
    let mut call = ScriptGrpcCall {
        target: o.get("target")?,
        plaintext: o.get::<_, Option<bool>>("plaintext")?.unwrap_or(false),
        ..ScriptGrpcCall::default()
    };
    if let Some(md) = o.get::<_, Option<Vec<Vec<Value<'_>>>>>("metadata")? {
        for kv in md {
            let [k, v] = kv.as_slice() else { continue };
            let Some(k) = k.as_string() else { continue };
            let k = k.to_string()?;
            // A binary value (`-bin`): its bytes base64-encoded, as gRPC sends them.
            let v = match v
                .as_object()
                .and_then(|b| ArrayBuffer::from_object(b.clone()))
            {
                Some(b) => STANDARD_NO_PAD.encode(b.as_bytes().unwrap_or_default()),
                None => match v.as_string() {
                    Some(s) => s.to_string()?,
                    None => continue,
                },
            };
            call.metadata.push((k, v));
        }
    }
    if let Some(ms) = o.get::<_, Option<f64>>("timeout")? {
        call.timeout = Duration::try_from_secs_f64(ms.max(0.0) / 1000.0).ok();
    }
    call.name = o.get::<_, Option<String>>("name")?;
    call.streaming = o.get::<_, Option<bool>>("stream")?.unwrap_or(false);
    if let Some(t) = o.get::<_, Option<Object<'_>>>("tls")? {
        call.tls = Some(ScriptGrpcTls {
            cacerts: t
                .get::<_, Option<Vec<String>>>("cacerts")?
                .unwrap_or_default(),
            cert: t.get::<_, Option<String>>("cert")?.unwrap_or_default(),
            key: t.get::<_, Option<String>>("key")?.unwrap_or_default(),
        });
    }
    Ok(call)
}

/// A received value as k6 shows it: a binary one (`-bin`) base64-decoded (padded
/// or not, as gRPC allows), its bytes read as UTF-8 text (as a Go string becomes
/// a JavaScript one in k6); any other as it came.
fn shown_value(name: &str, value: &str) -> String {
    if !name.ends_with("-bin") {
        return value.to_string();
    }
    let trimmed = value.trim_end_matches('=');
    match STANDARD_NO_PAD.decode(trimmed) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => value.to_string(),
    }
}

/// Metadata as k6 shows it: an object of lower-case names, each an array of
/// its values in the order they came.
pub(crate) fn metadata_object<'js>(
    ctx: &Ctx<'js>,
    md: &[(String, String)],
) -> rquickjs::Result<Object<'js>> {
    let o = Object::new(ctx.clone())?;
    for (k, v) in md {
        let list: rquickjs::Array<'js> =
            match o.get::<_, Option<rquickjs::Array<'js>>>(k.as_str())? {
                Some(a) => a,
                None => {
                    let a = rquickjs::Array::new(ctx.clone())?;
                    o.set(k.as_str(), a.clone())?;
                    a
                }
            };
        list.set(list.len(), shown_value(k, v))?;
    }
    Ok(o)
}

/// `__pado.grpcStreamWait(ms)` (negative: no limit): `null` when no stream is
/// open, `{ timeout: true }`, `{ id, kind: "data", message }` (an
/// ArrayBuffer) or `{ id, kind: "end", code, error, headers, trailers }`.
fn stream_wait<'js>(ctx: &Ctx<'js>, ms: f64) -> rquickjs::Result<Value<'js>> {
    let timeout =
        (ms >= 0.0).then(|| Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::ZERO));
    let o = Object::new(ctx.clone())?;
    match stream_call(ctx, ScriptGrpcStreamCall::Wait { timeout })? {
        ScriptGrpcStreamReply::Idle => return Ok(Value::new_null(ctx.clone())),
        ScriptGrpcStreamReply::Message { id, message } => {
            o.set("id", id)?;
            o.set("kind", "data")?;
            o.set("message", crate::lazy_builtins::array_buffer(ctx, message)?)?;
        }
        ScriptGrpcStreamReply::Ended { id, reply } => {
            o.set("id", id)?;
            o.set("kind", "end")?;
            match reply.code {
                Some(c) => o.set("code", c)?,
                None => o.set("code", Value::new_null(ctx.clone()))?,
            }
            o.set("error", reply.error.as_str())?;
            o.set("headers", metadata_object(ctx, &reply.headers)?)?;
            o.set("trailers", metadata_object(ctx, &reply.trailers)?)?;
        }
        _ => o.set("timeout", true)?,
    }
    Ok(o.into_value())
}

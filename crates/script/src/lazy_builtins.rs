//! A VU's context: every built-in a k6 script may use, the binary-data ones
//! (`ArrayBuffer`, `SharedArrayBuffer`, the twelve typed arrays, `DataView`,
//! `Atomics`) made on first use.
//!
//! Why: a context is made per VU, and QuickJS makes each built-in's
//! constructor and prototype objects in every context. Those of the binary-data
//! family are the largest group, ~15 KB of the ~48 KB a context with every
//! built-in costs (`tests_mem::print_vu_stages`), an eighth of a VU of
//! `bench/k6script.js`, and most scripts never touch them. Each of their global
//! names starts as an accessor (one small native per name, its getter and its
//! setter alike) that adds the whole family to the context
//! (`JS_AddIntrinsicTypedArrays`, which redefines each name as the plain global
//! it is in any context) and then reads, or assigns, the global.
//!
//! A native that hands the script an `ArrayBuffer` makes it with
//! [`array_buffer`], which adds the family first: an `ArrayBuffer` made before
//! would have no prototype. The one exception is a response's body bytes
//! (`natives::response_into`), which the script never sees (`js/http.js` keeps
//! them under a symbol until it decodes them): making them adds nothing, so a
//! VU that only reads responses as text never pays for the family.

use std::ffi::{c_int, CStr};
use std::sync::OnceLock;

use rquickjs::context::intrinsic::{
    BigInt, Date, Eval, Json, MapSet, Performance, Promise, Proxy, RegExp, RegExpCompiler, WeakRef,
};
use rquickjs::{qjs, ArrayBuffer, Context, Ctx, Runtime};

/// The globals `JS_AddIntrinsicTypedArrays` defines, each made on first use.
/// (A test checks that a context with them made has the same global names as
/// one with every built-in: `tests_mem`.)
pub(crate) const BINARY_GLOBALS: [&CStr; 16] = [
    c"ArrayBuffer",
    c"SharedArrayBuffer",
    c"Uint8ClampedArray",
    c"Int8Array",
    c"Uint8Array",
    c"Int16Array",
    c"Uint16Array",
    c"Int32Array",
    c"Uint32Array",
    c"BigInt64Array",
    c"BigUint64Array",
    c"Float16Array",
    c"Float32Array",
    c"Float64Array",
    c"DataView",
    c"Atomics",
];

/// A VU's context in `rt`: what `Context::full` makes, the binary-data
/// built-ins deferred to their first use.
pub(crate) fn vu_context(rt: &Runtime) -> rquickjs::Result<Context> {
    let context = Context::custom::<(
        Date,
        Eval,
        RegExpCompiler,
        RegExp,
        Json,
        Proxy,
        MapSet,
        Promise,
        BigInt,
        WeakRef,
        Performance,
    )>(rt)?;
    let raw = context.as_raw().as_ptr();
    // SAFETY: a context just made, on this thread; each value made here is
    // either handed to QuickJS (the accessors take the function) or freed.
    unsafe {
        let global = qjs::JS_GetGlobalObject(raw);
        let mut failed = false;
        for (i, name) in BINARY_GLOBALS.iter().enumerate() {
            let f = qjs::JS_NewCFunction2(
                raw,
                // QuickJS calls it as the magic kind it is declared with below
                // (the C API's own cast, `JS_NewCFunctionMagic`).
                Some(std::mem::transmute::<
                    unsafe extern "C" fn(
                        *mut qjs::JSContext,
                        qjs::JSValue,
                        c_int,
                        *mut qjs::JSValue,
                        c_int,
                    ) -> qjs::JSValue,
                    unsafe extern "C" fn(
                        *mut qjs::JSContext,
                        qjs::JSValue,
                        c_int,
                        *mut qjs::JSValue,
                    ) -> qjs::JSValue,
                >(binary_global)),
                name.as_ptr(),
                0,
                qjs::JSCFunctionEnum_JS_CFUNC_generic_magic,
                i as c_int,
            );
            if qjs::JS_IsException(f) {
                failed = true;
                break;
            }
            let atom = qjs::JS_NewAtom(raw, name.as_ptr());
            // The getter and the setter are one function (it tells them apart
            // by its arguments); each property holds its own reference.
            let set = qjs::JS_DupValue(raw, f);
            let r = qjs::JS_DefinePropertyGetSet(
                raw,
                global,
                atom,
                f,
                set,
                qjs::JS_PROP_CONFIGURABLE as c_int,
            );
            qjs::JS_FreeAtom(raw, atom);
            if r < 0 {
                failed = true;
                break;
            }
        }
        qjs::JS_FreeValue(raw, global);
        if failed {
            return Err(rquickjs::Error::Allocation);
        }
    }
    Ok(context)
}

/// The getter and setter of each of [`BINARY_GLOBALS`] (`magic` its index):
/// the family added, then the global read (no argument) or assigned (one).
unsafe extern "C" fn binary_global(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    argc: c_int,
    argv: *mut qjs::JSValue,
    magic: c_int,
) -> qjs::JSValue {
    let Some(name) = usize::try_from(magic)
        .ok()
        .and_then(|i| BINARY_GLOBALS.get(i))
    else {
        return qjs::JS_UNDEFINED;
    };
    // SAFETY: called by QuickJS in `ctx`, with `argc` arguments at `argv`.
    unsafe {
        if !add_binary_builtins(ctx) {
            return qjs::JS_EXCEPTION;
        }
        let global = qjs::JS_GetGlobalObject(ctx);
        let out = if argc == 0 {
            qjs::JS_GetPropertyStr(ctx, global, name.as_ptr())
        } else {
            // Now a plain, writable global: the assignment replaces it.
            let v = qjs::JS_DupValue(ctx, *argv);
            if qjs::JS_SetPropertyStr(ctx, global, name.as_ptr(), v) < 0 {
                qjs::JS_EXCEPTION
            } else {
                qjs::JS_UNDEFINED
            }
        };
        qjs::JS_FreeValue(ctx, global);
        out
    }
}

/// Add the binary-data built-ins to `ctx` unless they are there already (its
/// `ArrayBuffer` prototype is what says); `false` (an exception thrown in
/// `ctx`) when they cannot be.
///
/// QuickJS defines `Atomics` as a property of its own kind and aborts the
/// process if the global has one of that name already, so the one there is
/// taken out first: this module's accessor (a getter that is its own setter)
/// for good; anything the script put there put back once the family is made
/// (and, had the script deleted it, QuickJS's taken out again).
///
/// # Safety
/// `ctx` is a live context of this thread.
unsafe fn add_binary_builtins(ctx: *mut qjs::JSContext) -> bool {
    // SAFETY: as the caller promises; every value read is freed or handed on.
    unsafe {
        let proto = qjs::JS_GetClassProto(ctx, array_buffer_class(ctx));
        if !qjs::JS_IsNull(proto) {
            qjs::JS_FreeValue(ctx, proto);
            return true;
        }
        let global = qjs::JS_GetGlobalObject(ctx);
        let atom = qjs::JS_NewAtom(ctx, c"Atomics".as_ptr());
        let mut desc: qjs::JSPropertyDescriptor = std::mem::zeroed();
        let had = qjs::JS_GetOwnProperty(ctx, &mut desc, global, atom);
        let ours = had == 1
            && desc.flags & qjs::JS_PROP_GETSET as c_int != 0
            && qjs::JS_IsObject(desc.getter)
            && qjs::JS_VALUE_GET_PTR(desc.getter) == qjs::JS_VALUE_GET_PTR(desc.setter);
        let ok = had >= 0 && (had == 0 || qjs::JS_DeleteProperty(ctx, global, atom, 0) == 1);
        if ok {
            qjs::JS_AddIntrinsicTypedArrays(ctx);
            if had == 0 {
                qjs::JS_DeleteProperty(ctx, global, atom, 0);
            } else if !ours {
                let has = if desc.flags & qjs::JS_PROP_GETSET as c_int != 0 {
                    qjs::JS_PROP_HAS_GET | qjs::JS_PROP_HAS_SET
                } else {
                    qjs::JS_PROP_HAS_VALUE | qjs::JS_PROP_HAS_WRITABLE
                };
                let flags = (desc.flags & qjs::JS_PROP_C_W_E as c_int)
                    | (has | qjs::JS_PROP_HAS_CONFIGURABLE | qjs::JS_PROP_HAS_ENUMERABLE) as c_int;
                qjs::JS_DefineProperty(
                    ctx,
                    global,
                    atom,
                    desc.value,
                    desc.getter,
                    desc.setter,
                    flags,
                );
            }
        } else if had >= 0 {
            qjs::JS_ThrowTypeError(
                ctx,
                c"the binary-data built-ins cannot be made: the script made globalThis.Atomics undeletable".as_ptr(),
            );
        }
        if had == 1 {
            qjs::JS_FreeValue(ctx, desc.value);
            qjs::JS_FreeValue(ctx, desc.getter);
            qjs::JS_FreeValue(ctx, desc.setter);
        }
        qjs::JS_FreeAtom(ctx, atom);
        qjs::JS_FreeValue(ctx, global);
        ok
    }
}

/// QuickJS's class number of `ArrayBuffer` (internal to QuickJS, the same in
/// every context and runtime of the process): read once off a small one.
///
/// # Safety
/// `ctx` is a live context of this thread.
unsafe fn array_buffer_class(ctx: *mut qjs::JSContext) -> qjs::JSClassID {
    static CLASS: OnceLock<qjs::JSClassID> = OnceLock::new();
    *CLASS.get_or_init(|| {
        // SAFETY: as the caller promises; the buffer made is freed.
        unsafe {
            let byte = 0u8;
            let ab = qjs::JS_NewArrayBufferCopy(ctx, &byte, 1);
            let id = qjs::JS_GetClassID(ab);
            qjs::JS_FreeValue(ctx, ab);
            id
        }
    })
}

/// An `ArrayBuffer` of `bytes` for the script: the binary-data built-ins are
/// added to its context first, so it has its prototype.
pub(crate) fn array_buffer<'js>(
    ctx: &Ctx<'js>,
    bytes: Vec<u8>,
) -> rquickjs::Result<ArrayBuffer<'js>> {
    // SAFETY: a live context, on this thread.
    if !unsafe { add_binary_builtins(ctx.as_raw().as_ptr()) } {
        return Err(rquickjs::Error::Exception);
    }
    ArrayBuffer::new(ctx.clone(), bytes)
}

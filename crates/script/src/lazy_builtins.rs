//! A VU's context: every built-in a k6 script may use, three families of them
//! made on first use: the binary-data one (`ArrayBuffer`, `SharedArrayBuffer`,
//! the twelve typed arrays, `DataView`, `Atomics`), the collections (`Map`,
//! `Set`, `WeakMap`, `WeakSet`) and the weak references (`WeakRef`,
//! `FinalizationRegistry`).
//!
//! Why: a context is made per VU, and QuickJS makes each built-in's
//! constructor and prototype objects in every context. Of the ~48 KB a context
//! with every built-in costs (`tests_mem::print_vu_stages`), the binary-data
//! family is ~15 KB, the collections ~4 KB, the weak references ~1 KB, and
//! many scripts touch none of them. Each of their global names starts as an
//! accessor (one small native per name, its getter and its setter alike) that
//! adds the whole family to the context (QuickJS's own `JS_AddIntrinsic...`,
//! which redefines each name as the plain global it is in any context) and then
//! reads, or assigns, the global. None of them has a literal syntax, so nothing
//! but its globals (and pado's natives, below) makes one of their objects.
//!
//! A native that hands the script an `ArrayBuffer` makes it with
//! [`array_buffer`], which adds the family first: an `ArrayBuffer` made before
//! would have no prototype. A response's body bytes are no `ArrayBuffer`:
//! they stay in Rust (`response_lazy`) until the body is read as text, so a
//! VU that only reads responses as text never pays for the family.

use std::ffi::{c_int, CStr};
use std::sync::OnceLock;

use rquickjs::context::intrinsic::{
    BigInt, Date, Eval, Json, Performance, Promise, Proxy, RegExp, RegExpCompiler,
};
use rquickjs::{qjs, ArrayBuffer, Context, Ctx, Object, Runtime};

/// Built-ins QuickJS makes together, made in a VU's context on first use.
pub(crate) struct Family {
    /// Its globals, each an accessor until the family is made.
    pub(crate) names: &'static [&'static CStr],
    /// QuickJS's call that makes it.
    add: unsafe extern "C" fn(*mut qjs::JSContext),
    /// An expression that makes one of its objects: the class whose prototype
    /// in a context says whether the family is made there.
    probe: &'static str,
}

/// The binary-data built-ins (`JS_AddIntrinsicTypedArrays`).
const BINARY: usize = 0;

/// The families made on first use. (A test checks that a context with them
/// all made has the same globals as one with every built-in: `tests_mem`.)
pub(crate) const FAMILIES: [Family; 3] = [
    Family {
        names: &[
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
        ],
        add: qjs::JS_AddIntrinsicTypedArrays,
        probe: "new ArrayBuffer(1)",
    },
    Family {
        names: &[c"Map", c"Set", c"WeakMap", c"WeakSet"],
        add: qjs::JS_AddIntrinsicMapSet,
        probe: "new Map()",
    },
    Family {
        names: &[c"WeakRef", c"FinalizationRegistry"],
        add: qjs::JS_AddIntrinsicWeakRef,
        probe: "new WeakRef({})",
    },
];

/// Names per family at most: an accessor's `magic` is `family * SPAN + name`.
const SPAN: usize = 32;

/// A VU's context in `rt`: what `Context::full` makes, the [`FAMILIES`]
/// deferred to their first use.
pub(crate) fn vu_context(rt: &Runtime) -> rquickjs::Result<Context> {
    classes(rt)?;
    let context = Context::custom::<(
        Date,
        Eval,
        RegExpCompiler,
        RegExp,
        Json,
        Proxy,
        Promise,
        BigInt,
        Performance,
    )>(rt)?;
    let raw = context.as_raw().as_ptr();
    // SAFETY: a context just made, on this thread; each value made here is
    // either handed to QuickJS (the accessors take the function) or freed.
    unsafe {
        let global = qjs::JS_GetGlobalObject(raw);
        let mut failed = false;
        'all: for (f, family) in FAMILIES.iter().enumerate() {
            for (i, name) in family.names.iter().enumerate() {
                if !define_accessor(raw, global, name, (f * SPAN + i) as c_int) {
                    failed = true;
                    break 'all;
                }
            }
        }
        qjs::JS_FreeValue(raw, global);
        if failed {
            return Err(rquickjs::Error::Allocation);
        }
    }
    Ok(context)
}

/// Define `global[name]` as a configurable accessor whose getter and setter
/// are one native ([`deferred_global`], told which name by `magic`); `false`
/// when QuickJS could not.
///
/// # Safety
/// `ctx` is a live context of this thread and `global` its global object.
unsafe fn define_accessor(
    ctx: *mut qjs::JSContext,
    global: qjs::JSValue,
    name: &CStr,
    magic: c_int,
) -> bool {
    type Magic = unsafe extern "C" fn(
        *mut qjs::JSContext,
        qjs::JSValue,
        c_int,
        *mut qjs::JSValue,
        c_int,
    ) -> qjs::JSValue;
    type Generic = unsafe extern "C" fn(
        *mut qjs::JSContext,
        qjs::JSValue,
        c_int,
        *mut qjs::JSValue,
    ) -> qjs::JSValue;
    // SAFETY: as the caller promises. QuickJS calls the function as the
    // magic kind it is declared with (the C API's own cast,
    // `JS_NewCFunctionMagic`); the accessor takes both references to it.
    unsafe {
        let f = qjs::JS_NewCFunction2(
            ctx,
            Some(std::mem::transmute::<Magic, Generic>(deferred_global)),
            name.as_ptr(),
            0,
            qjs::JSCFunctionEnum_JS_CFUNC_generic_magic,
            magic,
        );
        if qjs::JS_IsException(f) {
            return false;
        }
        let atom = qjs::JS_NewAtom(ctx, name.as_ptr());
        let set = qjs::JS_DupValue(ctx, f);
        let r = qjs::JS_DefinePropertyGetSet(
            ctx,
            global,
            atom,
            f,
            set,
            qjs::JS_PROP_CONFIGURABLE as c_int,
        );
        qjs::JS_FreeAtom(ctx, atom);
        r >= 0
    }
}

/// The getter and setter of each deferred global (`magic`: its family and
/// name): the family added, then the global read (no argument) or assigned
/// (one).
unsafe extern "C" fn deferred_global(
    ctx: *mut qjs::JSContext,
    _this: qjs::JSValue,
    argc: c_int,
    argv: *mut qjs::JSValue,
    magic: c_int,
) -> qjs::JSValue {
    let at = usize::try_from(magic).unwrap_or(usize::MAX);
    let Some(name) = FAMILIES.get(at / SPAN).and_then(|f| f.names.get(at % SPAN)) else {
        return qjs::JS_UNDEFINED;
    };
    // SAFETY: called by QuickJS in `ctx`, with `argc` arguments at `argv`.
    unsafe {
        if !add_family(ctx, at / SPAN) {
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

/// Add family `f` of [`FAMILIES`] to `ctx` unless it is there already (the
/// prototype of its probe's class is what says); `false` (an exception thrown
/// in `ctx`) when it cannot be.
///
/// # Safety
/// `ctx` is a live context of this thread.
unsafe fn add_family(ctx: *mut qjs::JSContext, f: usize) -> bool {
    let Some(classes) = CLASSES.get() else {
        // No VU's context was made in this process yet (each reads the classes
        // first), so `ctx` is one made with every built-in: the options'
        // context, or the summary's (an `open(path, "b")` in their init code).
        return true;
    };
    let (Some(family), Some(&class)) = (FAMILIES.get(f), classes.get(f)) else {
        // SAFETY: as the caller promises.
        unsafe { qjs::JS_ThrowInternalError(ctx, c"no such family of built-ins".as_ptr()) };
        return false;
    };
    // SAFETY: as the caller promises; the prototype read is freed.
    unsafe {
        let proto = qjs::JS_GetClassProto(ctx, class);
        if !qjs::JS_IsNull(proto) {
            qjs::JS_FreeValue(ctx, proto);
            return true;
        }
        if f == BINARY {
            add_binary_builtins(ctx)
        } else {
            (family.add)(ctx);
            true
        }
    }
}

/// The class of each family's probe: QuickJS's own numbers, the same in every
/// context and runtime of the process, read once from a context with every
/// built-in.
static CLASSES: OnceLock<[qjs::JSClassID; 3]> = OnceLock::new();

/// Read [`CLASSES`] (once for the process) in a context of `rt` made for it.
fn classes(rt: &Runtime) -> rquickjs::Result<()> {
    if CLASSES.get().is_some() {
        return Ok(());
    }
    let context = Context::full(rt)?;
    let ids = context.with(|ctx| -> rquickjs::Result<[qjs::JSClassID; 3]> {
        let mut ids = [0; 3];
        for (id, family) in ids.iter_mut().zip(&FAMILIES) {
            let o: Object = ctx.eval(family.probe)?;
            // SAFETY: a live object of this context.
            *id = unsafe { qjs::JS_GetClassID(o.as_raw()) };
        }
        Ok(ids)
    })?;
    let _ = CLASSES.set(ids);
    Ok(())
}

/// Add the binary-data built-ins to `ctx`; `false` (an exception thrown in
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

/// An `ArrayBuffer` of `bytes` for the script: the binary-data built-ins are
/// added to its context first, so it has its prototype.
pub(crate) fn array_buffer<'js>(
    ctx: &Ctx<'js>,
    bytes: Vec<u8>,
) -> rquickjs::Result<ArrayBuffer<'js>> {
    // SAFETY: a live context, on this thread.
    if !unsafe { add_family(ctx.as_raw().as_ptr(), BINARY) } {
        return Err(rquickjs::Error::Exception);
    }
    ArrayBuffer::new(ctx.clone(), bytes)
}

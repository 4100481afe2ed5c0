//! What a VU of the issue's bench script (`bench/k6script.js`) costs in
//! QuickJS's own accounting (`JS_ComputeMemoryUsage`: deterministic, unlike a
//! process's resident memory), stage by stage, and the bound it is held to.

use rquickjs::qjs::JSMemoryUsage;
use rquickjs::{CatchResultExt, Context, Runtime};

use crate::tests::{drive, load_vu, ok_json, script, start};

/// The issue's bench script: a login, three requests with checks, a Trend.
const BENCH: &str = include_str!("../../../bench/k6script.js");

/// The runtime's memory after a full collection.
fn usage(rt: &Runtime) -> JSMemoryUsage {
    rt.run_gc();
    rt.memory_usage()
}

/// `b - a`, field by field, over `n` (what one VU added).
fn per(a: &JSMemoryUsage, b: &JSMemoryUsage, n: i64) -> String {
    let d = |x: i64, y: i64| (y - x) / n;
    format!(
        "used {:>6} malloc {:>6} ({:>4} blocks) | obj {:>3} {:>6} | prop {:>5} {:>6} | shape {:>3} {:>6} | func {:>3} {:>6} (code {:>5}) | cfunc {:>3} | str {:>3} {:>5} | arr {:>3} {:>4}",
        d(a.memory_used_size, b.memory_used_size),
        d(a.malloc_size, b.malloc_size),
        d(a.malloc_count, b.malloc_count),
        d(a.obj_count, b.obj_count),
        d(a.obj_size, b.obj_size),
        d(a.prop_count, b.prop_count),
        d(a.prop_size, b.prop_size),
        d(a.shape_count, b.shape_count),
        d(a.shape_size, b.shape_size),
        d(a.js_func_count, b.js_func_count),
        d(a.js_func_size, b.js_func_size),
        d(a.js_func_code_size, b.js_func_code_size),
        d(a.c_func_count, b.c_func_count),
        d(a.str_count, b.str_count),
        d(a.str_size, b.str_size),
        d(a.array_count, b.array_count),
        d(a.fast_array_elements, b.fast_array_elements),
    )
}

/// Make `n` VUs of `host` on this thread and run one iteration of each, every
/// request answered with a login's JSON; they are kept in `into`.
fn add_vus(host: &crate::Script, n: u64, into: &mut Vec<Box<dyn pado_engine::script::ScriptVu>>) {
    for _ in 0..n {
        let mut vu = load_vu(host, into.len() as u64 + 1);
        let seen = drive(vu.as_mut(), start(0, None), &|_| {
            ok_json(r#"{"token":"t"}"#)
        });
        assert_eq!(seen.done, Some(Ok(None)));
        assert_eq!(seen.requests.len(), 4, "a login and three requests");
        into.push(vu);
    }
}

#[test]
#[ignore = "prints what each stage of a further VU of the bench script costs"]
fn print_vu_stages() {
    const N: usize = 50;
    let (_d, host, _) = script(BENCH);
    let shared = host.shared.clone();
    let mut vus = Vec::new();
    // Two VUs made the real way first: the runtime, its atoms and the shapes
    // every context's objects share are there before anything is measured.
    add_vus(&host, 2, &mut vus);
    let rt = crate::worker_rt::this_threads_runtime().expect("a runtime");
    let before = usage(&rt);
    add_vus(&host, N as u64, &mut vus);
    let after = usage(&rt);
    eprintln!("{:<22} {}", "a whole VU", per(&before, &after, N as i64));
    let mut last = usage(&rt);
    let mut show = |what: &str| {
        let m = usage(&rt);
        eprintln!("{what:<22} {}", per(&last, &m, N as i64));
        last = m;
    };
    let full: Vec<Context> = (0..N).map(|_| Context::full(&rt).unwrap()).collect();
    show("Context::full");
    drop(full);
    show("(dropped)");
    let contexts: Vec<Context> = (0..N)
        .map(|_| crate::lazy_builtins::vu_context(&rt).unwrap())
        .collect();
    show("a VU's context");
    let each = |f: &dyn Fn(&rquickjs::Ctx<'_>)| {
        for c in &contexts {
            c.with(|ctx| f(&ctx));
        }
    };
    each(&|ctx| crate::natives::install(ctx, &shared, "default").unwrap());
    show("natives");
    each(&|ctx| {
        let env = shared.env_object(ctx).unwrap();
        ctx.globals().set("__ENV", env).unwrap();
        let o = shared.options_json.get().unwrap();
        let o = ctx.json_parse(o.as_bytes().to_vec()).unwrap();
        ctx.globals().set("__pado_options", o).unwrap();
    });
    show("__ENV, options");
    each(&|ctx| crate::host::run_prelude(ctx, &shared).unwrap());
    show("prelude");
    for m in ["k6", "k6/metrics", "k6/http (and its bodies)"] {
        each(&|ctx| {
            let p = rquickjs::Module::import(ctx, m.split(' ').next().unwrap()).unwrap();
            let _: rquickjs::Value = p.finish().catch(ctx).unwrap();
        });
        show(m);
    }
    each(&|ctx| {
        let p = rquickjs::Module::import(ctx, shared.main.clone()).unwrap();
        let _: rquickjs::Object = p.finish().catch(ctx).unwrap();
    });
    show("the script");
    drop(contexts);
    drop(vus);
}

/// `src` evaluated in `context`, as JSON.
fn eval_json(context: &Context, src: &str) -> String {
    context.with(|ctx| {
        let v: rquickjs::Value = ctx.eval(src).catch(&ctx).unwrap();
        ctx.json_stringify(v).unwrap().unwrap().to_string().unwrap()
    })
}

/// Each global's name and what its descriptor is (a data property and its
/// flags, or an accessor), sorted by name.
const GLOBALS: &str = r#"Object.getOwnPropertyNames(globalThis).sort().map((n) => {
  const d = Object.getOwnPropertyDescriptor(globalThis, n);
  return [n, "value" in d ? typeof d.value : "accessor", d.writable, d.enumerable, d.configurable];
})"#;

#[test]
fn a_vus_context_has_every_builtin_and_makes_the_deferred_ones_on_first_use() {
    let rt = Runtime::new().unwrap();
    let full = Context::full(&rt).unwrap();
    let m0 = usage(&rt);
    let lazy = crate::lazy_builtins::vu_context(&rt).unwrap();
    let m1 = usage(&rt);
    let lazy_cost = m1.malloc_size - m0.malloc_size;
    let full_cost = {
        let again = Context::full(&rt).unwrap();
        let cost = usage(&rt).malloc_size - m1.malloc_size;
        drop(again);
        cost
    };
    // Measured 34.6 KB against 48.2 KB (tests_mem::print_vu_stages).
    assert!(
        lazy_cost + 12 * 1024 < full_cost,
        "{lazy_cost} bytes, every built-in made: {full_cost}"
    );
    // Every global name is there before any is used; each binary one is an
    // accessor until then.
    let names = |c: &Context| eval_json(c, "Object.getOwnPropertyNames(globalThis).sort()");
    assert_eq!(names(&lazy), names(&full));
    let accessors: Vec<String> = crate::lazy_builtins::FAMILIES
        .iter()
        .flat_map(|f| f.names.iter())
        .map(|n| n.to_str().unwrap().to_string())
        .collect();
    let mut accessors = accessors;
    accessors.sort();
    let expected = serde_json::to_string(&accessors).unwrap();
    assert_eq!(
        eval_json(
            &lazy,
            "Object.getOwnPropertyNames(globalThis).filter((n) => !('value' in Object.getOwnPropertyDescriptor(globalThis, n))).sort()"
        ),
        expected
    );
    // The first use makes them all: each then the plain global it is in a
    // context with every built-in, and they work.
    assert_eq!(
        eval_json(
            &lazy,
            "[new Uint8Array([1, 2, 300]).join(), Object.getPrototypeOf(new ArrayBuffer(2)) === ArrayBuffer.prototype, new DataView(new ArrayBuffer(4)).byteLength, typeof Atomics.add, new Float64Array(2) instanceof Object.getPrototypeOf(Int8Array)]"
        ),
        r#"["1,2,44",true,4,"function",true]"#
    );
    assert_eq!(
        eval_json(
            &lazy,
            "const m = new Map([[1, 'a']]); const s = new Set([1, 1, 2]); const k = {}; const w = new WeakMap([[k, 3]]); [m.get(1), s.size, w.get(k), new WeakSet([k]).has(k), [...m.keys()], typeof new WeakRef(k).deref(), typeof FinalizationRegistry]"
        ),
        r#"["a",2,3,true,[1],"object","function"]"#
    );
    assert_eq!(eval_json(&lazy, GLOBALS), eval_json(&full, GLOBALS));
}

#[test]
fn a_binary_global_assigned_before_any_use_takes_the_value_and_the_rest_still_work() {
    let rt = Runtime::new().unwrap();
    let lazy = crate::lazy_builtins::vu_context(&rt).unwrap();
    assert_eq!(
        eval_json(
            &lazy,
            "globalThis.DataView = 5; [DataView, typeof Uint16Array, new Uint16Array(3).length, typeof Object.getOwnPropertyDescriptor(globalThis, 'DataView').value]"
        ),
        r#"[5,"function",3,"number"]"#
    );
    // In strict code too, and `typeof` of one not touched yet.
    assert_eq!(
        eval_json(
            &lazy,
            "'use strict'; globalThis.Float32Array = null; [Float32Array, typeof BigUint64Array]"
        ),
        r#"[null,"function"]"#
    );
    // `Atomics` as the script left it before the family was made: its own
    // value kept, its deletion kept (QuickJS would otherwise abort on it).
    let kept = crate::lazy_builtins::vu_context(&rt).unwrap();
    assert_eq!(
        eval_json(
            &kept,
            "Object.defineProperty(globalThis, 'Atomics', { value: 7, writable: true, configurable: true }); [new Int8Array(2).length, Atomics]"
        ),
        "[2,7]"
    );
    let gone = crate::lazy_builtins::vu_context(&rt).unwrap();
    assert_eq!(
        eval_json(
            &gone,
            "delete globalThis.Atomics; [new Int8Array(2).length, typeof Atomics, 'Atomics' in globalThis]"
        ),
        r#"[2,"undefined",false]"#
    );
    // Made undeletable, it is an exception when the family is wanted, not an
    // abort of the process.
    let stuck = crate::lazy_builtins::vu_context(&rt).unwrap();
    assert_eq!(
        eval_json(
            &stuck,
            "Object.defineProperty(globalThis, 'Atomics', { value: 7, configurable: false }); let e; try { new Int8Array(2); } catch (x) { e = String(x); } e"
        ),
        r#""TypeError: the binary-data built-ins cannot be made: the script made globalThis.Atomics undeletable""#
    );
}

#[test]
fn a_natives_array_buffer_has_its_prototype_in_a_vu_that_made_no_binary_builtin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.bin"), [1u8, 2, 3, 250]).unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(
        &p,
        r#"
import http from 'k6/http';
import crypto from 'k6/crypto';
const bin = open('f.bin', 'b');
export default function () {
  const rnd = crypto.randomBytes(5);
  const sum = crypto.sha256('abc', 'binary');
  const got = [
    bin instanceof ArrayBuffer, bin.byteLength, new Uint8Array(bin).join('.'),
    rnd instanceof ArrayBuffer, rnd.byteLength, sum.byteLength,
  ];
  http.get(`${__ENV.BASE}/?got=${got.join(',')}`);
}
"#,
    )
    .unwrap();
    let l = crate::load_for_run(&p, &[("BASE".into(), "http://127.0.0.1:9".into())]).unwrap();
    let mut vu = load_vu(&l.script, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    assert_eq!(seen.done, Some(Ok(None)));
    assert_eq!(
        seen.requests[0].url,
        "http://127.0.0.1:9/?got=true,4,1.2.3.250,true,5,32"
    );
}

#[test]
fn a_further_vu_of_the_bench_script_stays_under_its_measured_memory() {
    let (_d, host, _) = script(BENCH);
    let mut vus = Vec::new();
    add_vus(&host, 2, &mut vus);
    let rt = crate::worker_rt::this_threads_runtime().expect("a runtime");
    let before = usage(&rt);
    add_vus(&host, 20, &mut vus);
    let after = usage(&rt);
    let per_vu = (after.malloc_size - before.malloc_size) / 20;
    // QuickJS's own count of what its allocator holds (pado's, `js_alloc`):
    // 119,156 bytes a VU with every built-in made in each context, 110,748
    // with the binary-data ones made on first use, 106,996 with the
    // collections and weak references too (this script makes none of them:
    // its answers' bytes are read as text, it sets no timer), 100,916 with
    // `k6/http`'s files, forms and cookies by name loaded on first use (it
    // sends none), 96,076 with `__ENV`'s strings the runtime's atoms'.
    assert!(per_vu <= 98 * 1024, "{per_vu} bytes a VU");
    drop(vus);
}

#[test]
fn each_vus_env_is_its_own_object_of_strings_shared_with_no_other_vu() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.js");
    std::fs::write(
        &p,
        r#"
import http from 'k6/http';
export default function () {
  const n = __ENV.N;
  const seen = [typeof n, n, __ENV.E, n === '0042', Object.keys(__ENV).filter((k) => k === 'N' || k === 'E').join('+')];
  __ENV.N = 'changed by ' + __VU;
  delete __ENV.E;
  http.get(`${__ENV.BASE}/?${encodeURIComponent(seen.join(','))}`);
}
"#,
    )
    .unwrap();
    let env = [
        ("BASE", "http://127.0.0.1:9"),
        ("N", "123"),
        ("E", "파도 ✓"),
        // Given twice: the last one, as k6's --env.
        ("N", "0042"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let l = crate::load_for_run(&p, &env).unwrap();
    // Two VUs of one thread (one runtime, its atoms shared): what the first
    // changes in its `__ENV` the second does not see.
    for vu in 1..=2 {
        let mut v = load_vu(&l.script, vu);
        let seen = drive(v.as_mut(), start(0, None), &|_| ok_json("{}"));
        assert_eq!(seen.done, Some(Ok(None)));
        assert_eq!(
            seen.requests[0].url,
            "http://127.0.0.1:9/?string%2C0042%2C%ED%8C%8C%EB%8F%84%20%E2%9C%93%2Ctrue%2CE%2BN",
            "VU {vu}"
        );
    }
}

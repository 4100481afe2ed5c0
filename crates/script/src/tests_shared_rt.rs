//! VUs of one worker thread share a QuickJS runtime, each in a context of its
//! own: what k6 keeps per VU (globals, module state, `__VU`, exceptions,
//! promise jobs) stays per VU while VUs suspend mid-call in each other's
//! middle, and the runtime's per-call state never crosses from one to another.

use pado_engine::script::{ScriptCall, ScriptHost, ScriptReply, ScriptVu};

use crate::tests::{drive, load_vu, ok_json, script, start};

/// The script `main` (as `s.js`) beside `files`, loaded for a run.
fn script_with(
    main: &str,
    files: &[(&str, &str)],
) -> (tempfile::TempDir, std::sync::Arc<crate::Script>) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let p = dir.path().join("s.js");
    std::fs::write(&p, main).unwrap();
    let l = crate::load_for_run(&p, &[("BASE".into(), "http://127.0.0.1:9".into())]).unwrap();
    (dir, l.script)
}

/// Resume `vu` with `reply`: the URL of the request it then makes.
fn request_of(vu: &mut dyn ScriptVu, reply: ScriptReply) -> String {
    match vu.resume(reply) {
        ScriptCall::Http(r) => r.url,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// Resume `vu` with `reply`: how its iteration ended.
fn done_of(
    vu: &mut dyn ScriptVu,
    reply: ScriptReply,
) -> Result<Option<String>, pado_engine::script::ScriptFault> {
    match vu.resume(reply) {
        ScriptCall::Done(r) => r,
        other => panic!("expected the end of the iteration, got {other:?}"),
    }
}

fn answer() -> ScriptReply {
    ScriptReply::Http(Box::new(ok_json("{}")))
}

#[test]
fn vus_of_a_thread_share_one_runtime() {
    let (_d, host, _) = script("import http from 'k6/http';\nexport default function () {}\n");
    let before = crate::worker_rt::runtimes_made();
    let mut vus: Vec<_> = (1..=5).map(|i| load_vu(&host, i)).collect();
    for vu in &mut vus {
        let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
        assert_eq!(seen.done, Some(Ok(None)));
    }
    assert_eq!(
        crate::worker_rt::runtimes_made() - before,
        1,
        "five VUs on one thread, one runtime"
    );
}

#[test]
fn each_vu_keeps_its_own_globals_module_state_and_intrinsics() {
    let (_d, host) = script_with(
        r#"
import http from 'k6/http';
import { mark, marks } from './state.js';
let mine = 0;
export default function () {
  globalThis.seen = (globalThis.seen || []).concat([__VU]);
  mine += 1;
  mark(__VU);
  Array.prototype.owner = __VU;
  http.get(`${__ENV.BASE}/a?vu=${__VU}&seen=${globalThis.seen.join('.')}&mine=${mine}&marks=${marks().join('.')}`);
  http.get(`${__ENV.BASE}/b?vu=${__VU}&owner=${[].owner}&seen=${seen.join('.')}`);
}
"#,
        &[(
            "state.js",
            "const m = [];\nexport function mark(v) { m.push(v); }\nexport function marks() { return m; }\n",
        )],
    );
    let mut one = load_vu(&host, 1);
    let mut two = load_vu(&host, 2);
    // Interleaved: each suspends mid-iteration while the other runs.
    let a1 = request_of(one.as_mut(), start(0, None));
    let a2 = request_of(two.as_mut(), start(0, None));
    let b1 = request_of(one.as_mut(), answer());
    let b2 = request_of(two.as_mut(), answer());
    assert_eq!(a1, "http://127.0.0.1:9/a?vu=1&seen=1&mine=1&marks=1");
    assert_eq!(a2, "http://127.0.0.1:9/a?vu=2&seen=2&mine=1&marks=2");
    assert_eq!(b1, "http://127.0.0.1:9/b?vu=1&owner=1&seen=1");
    assert_eq!(b2, "http://127.0.0.1:9/b?vu=2&owner=2&seen=2");
    assert_eq!(done_of(one.as_mut(), answer()), Ok(None));
    assert_eq!(done_of(two.as_mut(), answer()), Ok(None));
    // A second iteration of VU 1 sees its own first, not VU 2's.
    let a1 = request_of(one.as_mut(), start(1, None));
    assert_eq!(a1, "http://127.0.0.1:9/a?vu=1&seen=1.1&mine=2&marks=1.1");
}

#[test]
fn an_exception_and_its_stack_belong_to_the_vu_that_threw_it() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
function waitsInOne() { return http.get(`${__ENV.BASE}/wait?vu=${__VU}`); }
function throwsInTwo() { throw new Error(`broke in ${__VU}`); }
export default function () {
  if (__VU === 2) throwsInTwo();
  waitsInOne();
}
"#,
    );
    let mut one = load_vu(&host, 1);
    let mut two = load_vu(&host, 2);
    let mut three = load_vu(&host, 3);
    assert_eq!(
        request_of(one.as_mut(), start(0, None)),
        "http://127.0.0.1:9/wait?vu=1"
    );
    assert_eq!(
        request_of(three.as_mut(), start(0, None)),
        "http://127.0.0.1:9/wait?vu=3"
    );
    // VU 3 ends (its stack freed) while VU 1 waits mid-call.
    assert_eq!(done_of(three.as_mut(), answer()), Ok(None));
    drop(three);
    let fault = done_of(two.as_mut(), start(0, None)).unwrap_err();
    assert_eq!(fault.message, "Error: broke in 2");
    assert!(fault.stack.contains("throwsInTwo"), "{fault:?}");
    assert!(
        !fault.stack.contains("waitsInOne"),
        "another VU's frames in the stack: {fault:?}"
    );
    // VU 1 goes on untouched; VU 2's next iteration throws again, alone.
    assert_eq!(done_of(one.as_mut(), answer()), Ok(None));
    let again = done_of(two.as_mut(), start(1, None)).unwrap_err();
    assert!(!again.stack.contains("waitsInOne"), "{again:?}");
}

#[test]
fn promise_jobs_run_in_the_vu_that_queued_them() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export default async function () {
  Promise.resolve().then(() => http.get(`${__ENV.BASE}/job?vu=${__VU}`));
  http.get(`${__ENV.BASE}/sync?vu=${__VU}`);
  await null;
}
"#,
    );
    let mut one = load_vu(&host, 1);
    let mut two = load_vu(&host, 2);
    // Each suspends in its synchronous request with its job queued.
    assert_eq!(
        request_of(one.as_mut(), start(0, None)),
        "http://127.0.0.1:9/sync?vu=1"
    );
    assert_eq!(
        request_of(two.as_mut(), start(0, None)),
        "http://127.0.0.1:9/sync?vu=2"
    );
    // VU 1 runs its jobs when it awaits: its own only.
    assert_eq!(
        request_of(one.as_mut(), answer()),
        "http://127.0.0.1:9/job?vu=1"
    );
    assert_eq!(done_of(one.as_mut(), answer()), Ok(None));
    assert_eq!(
        request_of(two.as_mut(), answer()),
        "http://127.0.0.1:9/job?vu=2"
    );
    assert_eq!(done_of(two.as_mut(), answer()), Ok(None));
}

#[test]
fn runaway_recursion_beside_a_waiting_vu_is_a_range_error_in_its_own_vu() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export default function () {
  if (__VU === 2) { const f = (n) => f(n + 1) + 1; f(0); }
  http.get(`${__ENV.BASE}/?vu=${__VU}`);
}
"#,
    );
    let mut one = load_vu(&host, 1);
    let mut two = load_vu(&host, 2);
    assert_eq!(
        request_of(one.as_mut(), start(0, None)),
        "http://127.0.0.1:9/?vu=1"
    );
    let fault = done_of(two.as_mut(), start(0, None)).unwrap_err();
    assert!(fault.message.contains("RangeError"), "{fault:?}");
    assert_eq!(done_of(one.as_mut(), answer()), Ok(None));
    // Both go on.
    let fault = done_of(two.as_mut(), start(1, None)).unwrap_err();
    assert!(fault.message.contains("RangeError"), "{fault:?}");
    assert_eq!(
        request_of(one.as_mut(), start(1, None)),
        "http://127.0.0.1:9/?vu=1"
    );
}

#[test]
fn pados_modules_carry_no_source_text_and_the_users_keep_their_lines() {
    let (_d, host, _) = script(
        "import http from 'k6/http';\nexport default function () {\n  const planted = 'only in the source 파도';\n  if (__ITER === 1) http.get(`${__ENV.BASE}/?f=${encodeURIComponent(String(function named() { return 1; }))}`);\n  throw new Error(planted);\n}\n",
    );
    let m = &host.shared.modules;
    let has = |name: &str, text: &str| m[name].windows(text.len()).any(|w| w == text.as_bytes());
    // A line of http.js's source: its text is not in the bytecode.
    assert!(include_str!("js/http.js").contains("const readCookies = (pairs, at) =>"));
    assert!(
        !has("k6/http", "const readCookies = (pairs, at) =>"),
        "k6/http's source text kept"
    );
    let main = m.keys().find(|k| k.ends_with("s.js")).unwrap().clone();
    assert!(
        !has(&main, "const planted ="),
        "the user's source text kept"
    );
    // The user's lines are kept: the fault names line 5.
    let mut vu = load_vu(&host, 1);
    let fault = done_of(vu.as_mut(), start(0, None)).unwrap_err();
    assert_eq!(fault.message, "Error: only in the source 파도");
    let said = host.describe_fault(&fault);
    assert!(said.contains("s.js:5:"), "{said}");
    // `fn.toString()` has no source to give: `[native code]`, as documented.
    let url = request_of(vu.as_mut(), start(1, None));
    assert_eq!(
        url,
        "http://127.0.0.1:9/?f=function%20named()%20%7B%0A%20%20%20%20%5Bnative%20code%5D%0A%7D"
    );
}

/// The issue's bench script (bench/k6script.js): a login, three requests with
/// checks, a custom Trend.
const BENCH: &str = include_str!("../../../bench/k6script.js");

#[test]
fn a_further_vu_of_the_bench_script_costs_its_context_not_a_runtime() {
    let (_d, host, _) = script(BENCH);
    let usage = || {
        let rt = crate::worker_rt::this_threads_runtime().expect("a runtime");
        rt.run_gc();
        rt.memory_usage()
    };
    let mut vus = Vec::new();
    let mut add = |n: u64| {
        for i in 0..n {
            let mut vu = load_vu(&host, i + 1);
            let seen = drive(vu.as_mut(), start(0, None), &|_| {
                ok_json(r#"{"token":"t 파도"}"#)
            });
            assert_eq!(seen.done, Some(Ok(None)));
            assert_eq!(seen.requests.len(), 4, "a login and three requests");
            vus.push(vu);
        }
    };
    add(1);
    let one = usage();
    add(20);
    let more = usage();
    // Names are held once for the runtime: twenty more VUs add none.
    assert_eq!(more.atom_count, one.atom_count);
    // A VU with a runtime of its own cost 271 KB of QuickJS memory (measured
    // with the same call); a further VU now costs its context, its modules'
    // instances and what its iteration keeps.
    let per_vu = (more.malloc_size - one.malloc_size) / 20;
    assert!(per_vu < 140 * 1024, "{per_vu} bytes a VU");
    assert!(per_vu < one.malloc_size, "{per_vu} of {}", one.malloc_size);
}

#[test]
#[ignore = "prints the QuickJS memory of VUs of the bench script"]
fn print_memory_per_vu() {
    let (_d, host, _) = script(BENCH);
    let usage = || {
        let rt = crate::worker_rt::this_threads_runtime().expect("a runtime");
        rt.run_gc();
        rt.memory_usage()
    };
    let mut vus = Vec::new();
    for n in [1usize, 11, 111] {
        while vus.len() < n {
            let mut vu = load_vu(&host, vus.len() as u64 + 1);
            let seen = drive(vu.as_mut(), start(0, None), &|_| {
                ok_json(r#"{"token":"t"}"#)
            });
            assert_eq!(seen.done, Some(Ok(None)));
            vus.push(vu);
        }
        eprintln!("{n} VUs: {:#?}", usage());
    }
}

#[test]
#[ignore = "prints what a context costs in a runtime, by its intrinsics"]
fn print_context_costs() {
    use rquickjs::context::intrinsic::{
        BigInt, Date, Eval, Json, MapSet, Performance, Promise, Proxy, RegExp, RegExpCompiler,
        TypedArrays, WeakRef,
    };
    use rquickjs::{Context, Runtime};
    let rt = Runtime::new().unwrap();
    let _warm = Context::full(&rt).unwrap();
    let size = || {
        rt.run_gc();
        rt.memory_usage().malloc_size
    };
    let mut keep = Vec::new();
    let mut per = |what: &str, make: &dyn Fn() -> Context| {
        let m0 = size();
        for _ in 0..20 {
            keep.push(make());
        }
        eprintln!("{what}: {} bytes a context", (size() - m0) / 20);
    };
    per("full", &|| Context::full(&rt).unwrap());
    per("base", &|| Context::base(&rt).unwrap());
    per("k6's", &|| {
        Context::custom::<(
            Date,
            Eval,
            RegExpCompiler,
            RegExp,
            Json,
            Proxy,
            MapSet,
            TypedArrays,
            Promise,
            BigInt,
        )>(&rt)
        .unwrap()
    });
    per("+WeakRef", &|| Context::custom::<WeakRef>(&rt).unwrap());
    per("+Performance", &|| {
        Context::custom::<Performance>(&rt).unwrap()
    });
    per("+TypedArrays", &|| {
        Context::custom::<TypedArrays>(&rt).unwrap()
    });
    per("+MapSet", &|| Context::custom::<MapSet>(&rt).unwrap());
    per("+Date", &|| Context::custom::<Date>(&rt).unwrap());
    per("+RegExp", &|| {
        Context::custom::<(RegExpCompiler, RegExp)>(&rt).unwrap()
    });
    per("+Promise", &|| Context::custom::<Promise>(&rt).unwrap());
    per("+Proxy", &|| Context::custom::<Proxy>(&rt).unwrap());
    per("+BigInt", &|| Context::custom::<BigInt>(&rt).unwrap());
}

#[test]
#[ignore = "prints what each stage of a VU's set-up costs"]
fn print_stages() {
    use rquickjs::{CatchResultExt, Context, Runtime};
    let (_d, host, _) = script(BENCH);
    let shared = host.shared.clone();
    let rt = Runtime::new().unwrap();
    rt.set_loader(
        crate::host::ScriptResolver,
        crate::host::BytecodeLoader(shared.clone()),
    );
    let _first = Context::full(&rt).unwrap();
    let raw = crate::worker_rt::raw_runtime(&_first);
    let usage = || unsafe {
        rquickjs::qjs::JS_RunGC(raw);
        let mut m = std::mem::zeroed();
        rquickjs::qjs::JS_ComputeMemoryUsage(raw, &mut m);
        m
    };
    let show = |what: &str, last: &mut rquickjs::qjs::JSMemoryUsage| {
        let m = usage();
        eprintln!(
            "{what}: malloc {} obj {} ({}) prop {} shape {} ({}) func {} ({}) cfunc {} bin {} ({}) str {} atoms {}",
            m.malloc_size - last.malloc_size,
            m.obj_count - last.obj_count,
            m.obj_size - last.obj_size,
            m.prop_size - last.prop_size,
            m.shape_count - last.shape_count,
            m.shape_size - last.shape_size,
            m.js_func_count - last.js_func_count,
            m.js_func_size - last.js_func_size,
            m.c_func_count - last.c_func_count,
            m.binary_object_count - last.binary_object_count,
            m.binary_object_size - last.binary_object_size,
            m.str_size - last.str_size,
            m.atom_count - last.atom_count,
        );
        *last = m;
    };
    let mut last = usage();
    let context = Context::full(&rt).unwrap();
    show("context", &mut last);
    context.with(|ctx| {
        crate::natives::install(&ctx, &shared, "default").unwrap();
        show("natives", &mut last);
        let _: () = ctx.eval(include_str!("js/prelude.js")).catch(&ctx).unwrap();
        show("prelude", &mut last);
        for m in ["k6", "k6/metrics", "k6/http"] {
            let p = rquickjs::Module::import(&ctx, m).unwrap();
            let _: rquickjs::Value = p.finish().catch(&ctx).unwrap();
            show(m, &mut last);
        }
    });
}

#[test]
fn k6_html_is_loaded_on_the_first_res_html_and_the_scripts_jobs_keep_their_order() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
export default async function () {
  const before = typeof globalThis.__pado.htmlParse;
  const order = [];
  Promise.resolve().then(() => order.push('job'));
  const r = http.get(`${__ENV.BASE}/page`);
  order.push(r.html().find('b').text());
  const after = typeof globalThis.__pado.htmlParse;
  await null;
  http.get(`${__ENV.BASE}/?before=${before}&after=${after}&order=${encodeURIComponent(order.join('.'))}`);
}
"#,
    );
    let mut vu = load_vu(&host, 1);
    assert_eq!(
        request_of(vu.as_mut(), start(0, None)),
        "http://127.0.0.1:9/page"
    );
    let page = ScriptReply::Http(Box::new(pado_engine::script::ScriptResponse {
        status: 200,
        headers: vec![("content-type".into(), "text/html".into())],
        body: "<p><b>파도</b></p>".as_bytes().to_vec(),
        url: "http://127.0.0.1:9/page".into(),
        proto: "HTTP/1.1".into(),
        ..Default::default()
    }));
    // Not loaded before; loaded by `res.html()`; the job queued before it runs
    // after it, at the `await`, as it would with k6/html imported.
    assert_eq!(
        request_of(vu.as_mut(), page),
        "http://127.0.0.1:9/?before=undefined&after=function&order=%ED%8C%8C%EB%8F%84.job"
    );
    assert_eq!(done_of(vu.as_mut(), answer()), Ok(None));
}

//! The script's own lifecycle in the runtime: `k6/execution` reads the numbers
//! and live figures the engine plants, `exec.test.abort()` asks the engine to
//! stop, `handleSummary` returns its files, and an exception is described with
//! its file, line, column and source line.

use std::sync::Arc;

use pado_engine::script::{IterationIds, ScriptFault, ScriptHost, ScriptReply};

use crate::tests::{drive, load_vu, ok_json, script};

#[test]
fn execution_gives_the_iterations_numbers_and_the_live_figures() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
import exec from 'k6/execution';
import { scenario, instance, vu, test } from 'k6/execution';
export const options = { vus: 3, duration: '1s' };
export default function () {
  const q = [scenario.iterationInTest, scenario.iterationInInstance, exec.scenario.name,
    scenario.executor, scenario.progress, scenario.startTime, instance.vusActive,
    instance.vusInitialized, instance.iterationsCompleted, instance.iterationsInterrupted,
    instance.currentTestRunDuration, vu.idInTest, vu.iterationInScenario, test.options.vus];
  http.get(`${__ENV.BASE}/?q=${q.join(',')}`);
}
"#,
    );
    let mut vu = load_vu(&host, 2);
    let start = ScriptReply::Start {
        iter: 5,
        data: None,
        ids: IterationIds {
            in_instance: 4,
            in_test: 17,
        },
    };
    let seen = drive(vu.as_mut(), start, &|_| ok_json("{}"));
    assert_eq!(seen.done, Some(Ok(None)));
    assert_eq!(
        seen.requests[0].url,
        "http://127.0.0.1:9/?q=17,4,default,shared-iterations,0.25,1700000000000,7,9,41,2,1500,2,5,3"
    );
}

#[test]
fn abort_asks_the_engine_to_stop_and_ends_the_iteration() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
import exec from 'k6/execution';
export default function () {
  http.get(`${__ENV.BASE}/before`);
  exec.test.abort('no more 파도');
  http.get(`${__ENV.BASE}/after`);
}
"#,
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), crate::tests::start(0, None), &|_| {
        ok_json("{}")
    });
    assert_eq!(seen.aborted.as_deref(), Some("no more 파도"));
    assert_eq!(seen.requests.len(), 1, "nothing after the abort is sent");
    let done = seen.done.unwrap().unwrap_err();
    assert!(
        done.message.contains("test aborted: no more 파도"),
        "{done:?}"
    );
}

#[test]
fn handle_summary_returns_strings_and_array_buffers_by_key() {
    let (_d, host, _) = script(
        r#"
export default function () {}
export function handleSummary(data) {
  return {
    stdout: `reqs ${data.metrics.http_reqs.values.count} 파도\n`,
    'out/a.json': JSON.stringify({ n: data.metrics.http_reqs.values.count }),
    'b.bin': new Uint8Array([1, 2, 255]).buffer,
  };
}
"#,
    );
    let files = host
        .handle_summary(r#"{"metrics":{"http_reqs":{"values":{"count":12}}}}"#)
        .expect("the script has handleSummary")
        .expect("it returns");
    assert_eq!(
        files,
        vec![
            ("stdout".to_string(), "reqs 12 파도\n".as_bytes().to_vec()),
            ("out/a.json".to_string(), br#"{"n":12}"#.to_vec()),
            ("b.bin".to_string(), vec![1, 2, 255]),
        ]
    );
}

#[test]
fn handle_summary_absent_thrown_or_of_a_wrong_type_is_said() {
    let (_d, none, _) = script("export default function () {}\n");
    assert!(
        none.handle_summary("{}").is_none(),
        "no handleSummary: pado's summary"
    );
    let (_d, thrown, _) = script(
        "export default function () {}\nexport function handleSummary(d) {\n  throw new Error('broke');\n}\n",
    );
    let f = thrown.handle_summary("{}").unwrap().unwrap_err();
    assert_eq!(f.message, "Error: broke");
    let said = thrown.describe_fault(&f);
    assert!(said.contains("s.js:3:"), "{said}");
    assert!(said.contains("throw new Error('broke');"), "{said}");
    let (_d, wrong, _) = script(
        "export default function () {}\nexport function handleSummary(d) { return { stdout: 42 }; }\n",
    );
    let f = wrong.handle_summary("{}").unwrap().unwrap_err();
    assert!(
        f.message.contains("`stdout`") && f.message.contains("string or an ArrayBuffer"),
        "{f:?}"
    );
}

#[test]
fn a_fault_is_described_with_file_line_column_and_the_source_line() {
    let (_d, host, _) = script(
        "import http from 'k6/http';\nexport function setup() {\n  const x = null;\n  if (!x) throw new TypeError('no token 파도');\n}\nexport default function () {}\n",
    );
    let mut setup = host.vu(pado_engine::script::ScriptRole::Setup).unwrap();
    let seen = drive(setup.as_mut(), crate::tests::start(0, None), &|_| {
        ok_json("{}")
    });
    let f: ScriptFault = seen.done.unwrap().unwrap_err();
    let said = host.describe_fault(&f);
    assert!(said.starts_with("TypeError: no token 파도"), "{said}");
    assert!(said.contains("s.js:4:"), "{said}");
    assert!(
        said.contains("  if (!x) throw new TypeError('no token 파도');"),
        "{said}"
    );
    assert!(said.contains('^'), "{said}");
    let _ = Arc::clone(&host);
}

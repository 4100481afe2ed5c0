//! k6's `check` as most scripts call it (no tags, outside any group), made in
//! one native call (`natives::check_plain`): the same checks, in the same
//! order, with the same truth and the same answer as the JavaScript loop
//! `js/k6.js` keeps for every other call (reached here with empty tags), and
//! each planted value's truth checked exactly.

use crate::tests::{drive, load_vu, ok_json, script, start};

#[test]
fn a_plain_check_counts_what_the_javascript_loop_counts() {
    let (_d, host, _) = script(
        r#"
import http from 'k6/http';
import { check } from 'k6';
const cases = [
  // Keys in Object.keys's order (integer-like first); functions called with
  // the value and no `this`; any other value taken for its truth.
  () => [{ n: 0 }, { e: (r) => r.n, a: () => true, b: 0, c: 'x', d: null, 2: () => 1, 1: false,
                     f: function () { return this === undefined; }, g: {}, h: NaN }],
  () => [5, [() => true, '']],
  () => [1, { only: (v) => v === 1 }],
  () => [1, {}],
  () => [1, null],
  () => [1, undefined],
];
export default function () {
  const out = [];
  for (const make of cases) {
    const [v, sets] = make();
    out.push(check(v, sets));
    out.push(check(v, sets, {}));
  }
  // An exception in a check's function ends the call; the checks before it count.
  const thrown = [];
  for (const tags of [undefined, {}]) {
    try {
      check(1, { x: () => true, y: () => { throw new Error('boom'); }, z: () => true }, tags);
      thrown.push('none');
    } catch (e) {
      thrown.push(String(e.message));
    }
  }
  http.post(`${__ENV.BASE}/report`, JSON.stringify({ out, thrown }));
}
"#,
    );
    let mut vu = load_vu(&host, 1);
    let seen = drive(vu.as_mut(), start(0, None), &|_| ok_json("{}"));
    assert_eq!(seen.done, Some(Ok(None)));
    let report: serde_json::Value =
        serde_json::from_slice(&seen.requests.last().expect("reported").body).unwrap();
    assert_eq!(
        report["out"],
        serde_json::json!([
            false, false, false, false, true, true, true, true, true, true, true, true
        ])
    );
    assert_eq!(report["thrown"], serde_json::json!(["boom", "boom"]));
    let first = [
        ("1", false),
        ("2", true),
        ("e", false),
        ("a", true),
        ("b", false),
        ("c", true),
        ("d", false),
        ("f", true),
        ("g", true),
        ("h", false),
    ];
    let mut want = Vec::new();
    // Each case twice: the native call, then the JavaScript loop.
    for case in [&first[..], &[("0", true), ("1", false)], &[("only", true)]] {
        for _ in 0..2 {
            want.extend(case.iter().map(|(n, ok)| (n.to_string(), *ok)));
        }
    }
    for _ in 0..2 {
        want.push(("x".to_string(), true));
    }
    assert_eq!(seen.checks, want);
}

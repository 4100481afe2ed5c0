//! A `SharedArray` is one copy for every VU: 1,000 VUs over a 10 MB array hold
//! about the memory of 1,000 VUs over a one-row array (the rows live once in
//! pado; each VU decodes a row when it reads it, as k6 does). Judged on the
//! process's resident memory, never on time. Alone in its test binary, so no
//! other test's memory moves the figure.

use pado_engine::script::{IterationIds, ScriptCall, ScriptHost, ScriptReply, ScriptRole};

const VUS: u64 = 1000;

/// Resident memory of this process, in bytes (Linux: `/proc/self/statm`).
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// RSS growth of `VUS` VUs, each having run one iteration that reads rows of a
/// SharedArray of `rows` rows of about 100 bytes each (kept alive while measured).
fn growth_with(rows: usize) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let mut json = String::from("[");
    for i in 0..rows {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            r#"{{"id":{i},"name":"파도-{i:08}","pad":"{}"}}"#,
            "x".repeat(64)
        ));
    }
    json.push(']');
    std::fs::write(dir.path().join("data.json"), &json).unwrap();
    let script = dir.path().join("s.js");
    std::fs::write(
        &script,
        r#"
import { SharedArray } from 'k6/data';
const data = new SharedArray('rows', () => JSON.parse(open('./data.json')));
export default function () {
  const row = data[(__VU * 7919) % data.length];
  if (row.id !== (__VU * 7919) % data.length || !row.name.startsWith('파도-')) {
    throw new Error('wrong row ' + JSON.stringify(row));
  }
}
"#,
    )
    .unwrap();
    let loaded = pado_script::load_for_run(&script, &[]).unwrap();
    let before = rss().unwrap();
    let mut vus = Vec::new();
    for vu in 1..=VUS {
        let mut v = loaded
            .script
            .vu(ScriptRole::Load {
                scenario: "default".into(),
                exec: "default".into(),
                vu,
            })
            .unwrap();
        let start = ScriptReply::Start {
            iter: 0,
            data: None,
            ids: IterationIds::default(),
        };
        match v.resume(start) {
            ScriptCall::Done(Ok(None)) => {}
            other => panic!("VU {vu}: {other:?}"),
        }
        vus.push(v);
    }
    let after = rss().unwrap();
    drop(vus);
    after.saturating_sub(before)
}

#[test]
fn a_ten_megabyte_shared_array_is_held_once_for_a_thousand_vus() {
    if rss().is_none() {
        eprintln!("skipped: no /proc/self/statm on this system");
        return;
    }
    // The big array first: memory freed by it can only make the tiny run's
    // growth smaller, never the difference.
    let big = growth_with(100_000);
    let tiny = growth_with(1);
    let mb = |b: u64| b as f64 / 1e6;
    eprintln!(
        "1000 VUs: {:.1} MB over a 10 MB SharedArray, {:.1} MB over a one-row one",
        mb(big),
        mb(tiny)
    );
    // A copy per VU would be 1000 × 10 MB = 10 GB; one copy (the rows and the
    // text they were built from) is tens of MB.
    assert!(
        big.saturating_sub(tiny) < 200_000_000,
        "the 10 MB array costs {:.1} MB more for {VUS} VUs",
        mb(big.saturating_sub(tiny))
    );
}

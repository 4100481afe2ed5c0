//! `pado merge` fed hostile segment directories: what a coordinator collects from
//! generators it does not control (a pod's result tar, an agent's upload).
//!
//! The input is a small text archive: a line `#> <segment>/<file>` starts a file of
//! segment directory `<segment>` (0 to 3), the lines after it are its bytes, up to
//! the next such line. The directories are merged exactly as `pado merge` does
//! ([`pado_results::merge::plan`], then [`MergePlan::write_each`]), and the merged
//! timeline is checked against the bound the merge promises: never longer than the
//! plan the segments record plus the hour [`bound`] allows past it, its seconds
//! handed on once each and in order.
//!
//! [`bound`]: pado_results::merge
//! [`MergePlan::write_each`]: pado_results::merge::MergePlan::write_each

use std::path::{Path, PathBuf};

use pado_results::merge;
use pado_results::ResultDir;

use super::with_scratch;

/// Segment directories an input may fill.
const SEGMENTS: usize = 4;

/// The files a segment may hold (anything else named is ignored).
const FILES: &[&str] = &[
    "run.json",
    "timeline.jsonl",
    "failures.jsonl",
    "events.jsonl",
    "observe.jsonl",
    "summary.json",
];

/// Marks the start of a file in an input.
const MARK: &[u8] = b"#> ";

/// Seconds a merged timeline may run past its plan (`merge::bound`'s hour).
const PAST_PLAN_S: f64 = 3600.0;

/// The longest plan a merge assumes when the segments record none (31 days).
const NO_PLAN_S: f64 = 31.0 * 24.0 * 3600.0;

/// Tokens of the input language for the mutator.
pub(crate) const DICT: &[&[u8]] = &[
    b"\n#> 0/run.json\n",
    b"\n#> 1/run.json\n",
    b"\n#> 0/timeline.jsonl\n",
    b"\n#> 1/timeline.jsonl\n",
    b"\n#> 2/timeline.jsonl\n",
    b"\n#> 1/failures.jsonl\n",
    b"\n#> 0/events.jsonl\n",
    b"\n#> 0/observe.jsonl\n",
    b"\n#> 1/summary.json\n",
    b"\"segment\":",
    b"\"index\":",
    b"\"count\":",
    b"\"weights\":[",
    b"\"plan_id\":\"",
    b"\"start_at\":\"",
    b"\"planned_s\":",
    b"\"started_at\":\"",
    b"\"duration_s\":",
    b"\"t\":",
    b"\"t\":4000000000",
    b"\"t\":4294967295",
    b"2099-01-01T00:00:00Z",
    b"1970-01-01T00:00:00Z",
    b"1e308",
    b"-1",
    b"NaN",
];

/// Two segments of one 3-second test, each from the fuzz crate's sample result
/// (`data/result/`) with the segment fields a split run writes; then the same with
/// a third segment missing and with one started a second late; then the first
/// with a second 100000 in a segment's timeline.
pub(crate) fn seeds() -> Vec<Vec<u8>> {
    let run: serde_json::Value =
        serde_json::from_slice(super::RUN_JSON).expect("data/result/run.json is JSON");
    let segment_run = |index: u32, count: u32, started_at: &str| {
        let mut r = run.clone();
        r["started_at"] = started_at.into();
        r["planned_s"] = 3.0.into();
        r["segment"] = serde_json::json!({
            "index": index,
            "count": count,
            "weights": [],
            "plan_id": "ab12cd34ef56",
            "start_at": "2026-11-23T02:20:36.000Z",
        });
        serde_json::to_vec_pretty(&r).expect("run.json")
    };
    let mut seeds = Vec::new();
    for (count, starts) in [
        (
            2,
            vec!["2026-11-23T02:20:36.004Z", "2026-11-23T02:20:36.002Z"],
        ),
        (
            3,
            vec!["2026-11-23T02:20:36.004Z", "2026-11-23T02:20:37.010Z"],
        ),
    ] {
        let mut input = Vec::new();
        for (i, at) in starts.iter().enumerate() {
            input.extend_from_slice(format!("#> {i}/run.json\n").as_bytes());
            input.extend_from_slice(&segment_run(i as u32, count, at));
            input.extend_from_slice(format!("\n#> {i}/timeline.jsonl\n").as_bytes());
            input.extend_from_slice(super::TIMELINE);
            // A summary.json says pado finished writing the segment.
            input.extend_from_slice(format!("#> {i}/summary.json\n{{}}\n").as_bytes());
        }
        input.extend_from_slice(b"#> 0/events.jsonl\n");
        input.extend_from_slice(super::EVENTS);
        input.extend_from_slice(b"#> 1/observe.jsonl\n");
        input.extend_from_slice(super::OBSERVE);
        seeds.push(input);
    }
    // A segment whose last second lies far past the plan (3 s and an hour).
    let mut far = seeds[0].clone();
    far.extend_from_slice(b"#> 1/timeline.jsonl\n");
    far.extend_from_slice(super::TIMELINE);
    far.extend_from_slice(b"{\"t\":100000,\"vus\":1,\"vus_max\":1}\n");
    seeds.push(far);
    seeds
}

/// The files of each segment directory an input names: `(segment, file, bytes)`.
fn files_of(data: &[u8]) -> Vec<(usize, &'static str, &[u8])> {
    let mut out = Vec::new();
    let mut current: Option<(usize, &'static str, usize)> = None;
    let mut at = 0;
    let mut close = |current: Option<(usize, &'static str, usize)>, end: usize| {
        if let Some((seg, name, from)) = current {
            // The newline before the next mark belongs to the mark.
            let end = end.max(from);
            let body = &data[from..end];
            let body = body.strip_suffix(b"\n").unwrap_or(body);
            out.push((seg, name, body));
        }
    };
    while at <= data.len() {
        let line_end = data[at..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(data.len(), |p| at + p);
        let line = &data[at..line_end];
        if let Some(rest) = line.strip_prefix(MARK) {
            let named = std::str::from_utf8(rest).ok().and_then(|r| {
                let (seg, file) = r.trim().split_once('/')?;
                let seg: usize = seg.parse().ok()?;
                let file = FILES.iter().find(|f| **f == file)?;
                (seg < SEGMENTS).then_some((seg, *file))
            });
            if let Some((seg, file)) = named {
                close(current.take(), at);
                current = Some((seg, file, (line_end + 1).min(data.len())));
            }
        }
        at = line_end + 1;
    }
    close(current, data.len());
    out
}

/// The test's planned length as the merge reads it from the segments' `run.json`:
/// their largest usable `planned_s`, else the end of their last stage, else none
/// (31 days). Read here independently of the merge, from the files as planted.
fn planned_s(dirs: &[PathBuf]) -> f64 {
    let runs: Vec<serde_json::Value> = dirs
        .iter()
        .filter_map(|d| std::fs::read(d.join("run.json")).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    let usable = |v: f64| v.is_finite() && v > 0.0;
    let recorded = runs
        .iter()
        .filter_map(|r| r.get("planned_s")?.as_f64())
        .filter(|v| usable(*v))
        .fold(0.0f64, f64::max);
    if recorded > 0.0 {
        return recorded.min(NO_PLAN_S);
    }
    let stages = runs
        .iter()
        .filter_map(|r| r.get("stages")?.as_array())
        .flatten()
        .filter_map(|s| s.get("end_s")?.as_f64())
        .filter(|v| usable(*v))
        .fold(0.0f64, f64::max);
    if stages > 0.0 {
        return stages.min(NO_PLAN_S);
    }
    NO_PLAN_S
}

fn fresh(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("create scratch directory");
}

/// Merge the segment directories the input describes.
pub fn merge(data: &[u8]) {
    with_scratch(|scratch| {
        let root = scratch.join("merge");
        fresh(&root);
        let mut dirs: Vec<PathBuf> = Vec::new();
        for (seg, name, bytes) in files_of(data) {
            let dir = root.join(format!("seg{seg}"));
            std::fs::create_dir_all(&dir).expect("create segment directory");
            std::fs::write(dir.join(name), bytes).expect("write segment file");
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        let plan = match merge::plan(&dirs) {
            Ok(p) => p,
            Err(e) => {
                assert!(!e.to_string().is_empty(), "an empty merge error");
                return;
            }
        };
        // What the merge may write: the plan the segments record and an hour.
        let limit = (planned_s(&dirs) + PAST_PLAN_S).ceil();
        let out = ResultDir::create(root.join("merged")).expect("create merged directory");
        let mut next = 0u32;
        let written = plan.write_each(&out, |rec| {
            assert_eq!(rec.t, next, "merged seconds out of order");
            next += 1;
            assert!(
                f64::from(rec.t) < limit,
                "merged second {} past the bound of {limit} s",
                rec.t
            );
        });
        match written {
            Ok(o) => {
                assert_eq!(
                    o.seconds, next,
                    "outcome's seconds differ from those written"
                );
                assert!(
                    f64::from(o.seconds) <= limit,
                    "{} s merged, bound {limit}",
                    o.seconds
                );
                assert_eq!(o.generators, dirs.len());
                // What was written, a reader of pado's own must read.
                let merged = ResultDir::open(out.path()).expect("open merged directory");
                let mut reader = merged.timeline_reader().expect("merged timeline");
                let mut n = 0u32;
                while let Some(rec) = reader
                    .next_second()
                    .unwrap_or_else(|e| panic!("merged timeline unreadable: {e}"))
                {
                    assert_eq!(rec.t, n, "merged timeline's seconds");
                    n += 1;
                }
                assert_eq!(n, o.seconds, "merged timeline's length");
            }
            Err(e) => assert!(!e.to_string().is_empty(), "an empty merge error"),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_splits_into_the_files_it_names() {
        let input =
            b"junk\n#> 0/run.json\n{}\n#> 9/run.json\nx\n#> 1/timeline.jsonl\na\nb\n#> 0/nope\nc";
        let got = files_of(input);
        assert_eq!(
            got,
            vec![
                (0, "run.json", &b"{}\n#> 9/run.json\nx"[..]),
                (1, "timeline.jsonl", &b"a\nb\n#> 0/nope\nc"[..]),
            ]
        );
    }

    #[test]
    fn the_seeds_merge_to_the_planted_length() {
        // Two segments of a 3-second test, both 3 seconds long, the second 2 ms
        // earlier: the merge writes the same 3 seconds; every seed passes the target.
        let seeds = seeds();
        for s in &seeds {
            merge(s);
        }
        with_scratch(|scratch| {
            let root = scratch.join("merge");
            fresh(&root);
            let mut dirs = Vec::new();
            for (seg, name, bytes) in files_of(&seeds[0]) {
                let dir = root.join(format!("seg{seg}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(name), bytes).unwrap();
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                }
            }
            let plan = merge::plan(&dirs).unwrap();
            assert!(plan.problems().is_empty(), "{:?}", plan.problems());
            let out = ResultDir::create(root.join("merged")).unwrap();
            let o = plan.write(&out).unwrap();
            assert_eq!((o.generators, o.seconds), (2, 3));
        });
    }

    #[test]
    fn a_second_far_past_the_plan_is_refused_with_its_file_and_field() {
        let far = &seeds()[2];
        with_scratch(|scratch| {
            let root = scratch.join("merge-far");
            fresh(&root);
            let mut dirs = Vec::new();
            for (seg, name, bytes) in files_of(far) {
                let dir = root.join(format!("seg{seg}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(name), bytes).unwrap();
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                }
            }
            let e = merge::plan(&dirs).err().expect("refused").to_string();
            assert!(e.contains("timeline.jsonl") && e.contains("`t`"), "{e}");
            assert!(e.contains("100000"), "{e}");
        });
        // And the target passes it: refused, nothing written.
        merge(far);
    }
}

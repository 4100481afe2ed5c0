//! Merges of synthetic segment directories written through the real writer types.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::result_dir::{SUMMARY_FILE, TIMELINE_FILE};
use pado_metrics::{
    FailureSample, GeneratorStats, Interval, LatencyHistogram, Phases, RequestSample,
    ScenarioStats, SeriesKey, SeriesStats,
};

/// A segment to write: which share, when it started, its latencies per second.
struct Seg {
    index: u32,
    count: u32,
    plan: &'static str,
    start_at: Option<&'static str>,
    started_at: &'static str,
    /// Per second: the request durations (µs) completed in it.
    seconds: Vec<Vec<u64>>,
    finished: bool,
    interrupted: bool,
    /// A share with no VU (fewer VUs than segments) whose run lasted this long, s.
    idle_for: Option<f64>,
}

impl Seg {
    fn new(index: u32, count: u32, seconds: Vec<Vec<u64>>) -> Self {
        Seg {
            index,
            count,
            plan: "ab12cd34ef56",
            start_at: Some("2026-01-01T00:00:00.000Z"),
            started_at: "2026-01-01T00:00:00.004Z",
            seconds,
            finished: true,
            interrupted: false,
            idle_for: None,
        }
    }
}

/// Durations for segment `seed`: a spread that differs per segment and second.
fn durations(seed: u64, n_seconds: usize, per_second: usize) -> Vec<Vec<u64>> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n_seconds)
        .map(|_| {
            (0..per_second)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // 0.2 ms .. ~200 ms, skewed by segment.
                    200 + (x >> 33) % (20_000 * (seed + 1))
                })
                .collect()
        })
        .collect()
}

fn write_seg(root: &Path, seg: &Seg) -> PathBuf {
    let path = root.join(format!("seg{}", seg.index));
    let dir = ResultDir::create(&path).unwrap();
    let len = seg.seconds.len() as f64;
    let meta = RunMeta {
        format: "pado-result".into(),
        version: FORMAT_VERSION,
        name: "split".into(),
        started_at: seg.started_at.into(),
        duration_s: match (seg.finished, seg.idle_for) {
            (false, _) => 0.0,
            (true, Some(d)) => d,
            (true, None) => len,
        },
        interrupted: seg.interrupted,
        workers: 2,
        cores_allowed: 2,
        // As the engine writes a segment's plan: its own share, then the whole test.
        scenarios: vec![crate::ScenarioMeta {
            name: "default".into(),
            executor: "constant-vus".into(),
            description: format!(
                "segment {}/{} (1/{} of the load): 5 VUs; whole test: {} VUs for 4s",
                seg.index,
                seg.count,
                seg.count,
                5 * seg.count
            ),
            open_model: false,
            // The VU ceiling of this generator's share.
            max_vus: Some(3 + seg.index),
            scripted: false,
        }],
        stages: vec![StageMark {
            scenario: "default".into(),
            index: 0,
            start_s: 0.0,
            end_s: 4.0,
            label: "hold 5 VUs".into(),
            target: 5.0,
            from: Some(5.0),
        }],
        thresholds: vec![crate::ThresholdSpec {
            metric: "http_reqs".into(),
            expr: "count > 1".into(),
            abort_on_fail: false,
            window_s: None,
        }],
        warnings: vec![format!("overloaded {}", seg.index)],
        segment: Some(SegmentMeta {
            index: seg.index,
            count: seg.count,
            weights: vec![1; seg.count as usize],
            plan_id: seg.plan.into(),
            start_at: seg.start_at.map(str::to_string),
            start_skew_ms: seg.start_at.map(|_| 4.0 + f64::from(seg.index) * 5.0),
            ran_setup: seg.index == 0,
        }),
        ..Default::default()
    };
    dir.write_meta(&meta).unwrap();
    let mut w = dir.timeline_writer().unwrap();
    for (t, durs) in seg.seconds.iter().enumerate() {
        let mut s = SeriesStats::new(SeriesKey::named("get"));
        for (i, d) in durs.iter().enumerate() {
            s.record(&RequestSample {
                status: if i % 10 == 0 { 500 } else { 200 },
                failed: i % 10 == 0,
                phases: Phases {
                    duration_us: *d,
                    waiting_us: d / 2,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let mut rec = SecondRecord::new(t as u32);
        rec.absorb(Interval {
            series: vec![s],
            scenarios: vec![ScenarioStats {
                name: "default".into(),
                iterations: durs.len() as u64,
                ..Default::default()
            }],
            vus: if seg.idle_for.is_some() { 0 } else { 5 },
            vus_max: if seg.idle_for.is_some() { 0 } else { 5 },
            generator: Some(GeneratorStats {
                wall_ns: 1_000_000_000,
                cpu_ns: 100_000_000 * (u64::from(seg.index) + 1),
                wait_ns: Some(0),
                ..Default::default()
            }),
            // Every request over HTTP/2; segment i opens i + 1 connections in its
            // first second, segment 2's over TLS.
            protocols: pado_metrics::ProtocolCounts {
                requests_http2: durs.len() as u64,
                conns_http2: if t == 0 { u64::from(seg.index) + 1 } else { 0 },
                conns_tls: if t == 0 && seg.index == 2 { 3 } else { 0 },
                ..Default::default()
            },
            ..Default::default()
        });
        w.write(&rec).unwrap();
    }
    drop(w);
    dir.write_failures(&[
        FailureSample {
            step: "get".into(),
            category: "http_500".into(),
            second: 1,
            ..Default::default()
        },
        FailureSample {
            step: "get".into(),
            category: "http_500".into(),
            second: 2,
            ..Default::default()
        },
    ])
    .unwrap();
    if seg.finished {
        fs::write(path.join(SUMMARY_FILE), "{}").unwrap();
    }
    path
}

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("pado-merge-")
        .tempdir()
        .unwrap()
}

fn merge_into(root: &Path, dirs: &[PathBuf]) -> (ResultDir, MergeOutcome) {
    let out = ResultDir::create(root.join("merged")).unwrap();
    let outcome = plan(dirs).unwrap().write(&out).unwrap();
    (out, outcome)
}

#[test]
fn merged_percentiles_are_those_of_every_sample() {
    let tmp = tmp();
    let segs: Vec<Seg> = (0..3)
        .map(|i| Seg::new(i, 3, durations(u64::from(i), 5, 300 + 50 * i as usize)))
        .collect();
    let mut reference = LatencyHistogram::new();
    for s in &segs {
        for d in s.seconds.iter().flatten() {
            reference.record(*d);
        }
    }
    // Given out of order: the merge sorts by segment.
    let dirs: Vec<PathBuf> = segs
        .iter()
        .rev()
        .map(|s| write_seg(tmp.path(), s))
        .collect();
    let (out, outcome) = merge_into(tmp.path(), &dirs);
    assert!(outcome.partial.is_empty(), "{:?}", outcome.partial);
    let totals = out.read_totals().unwrap();
    let all = totals.overall();
    let (m, r) = (
        all.phase(pado_metrics::Phase::Duration).summary(),
        reference.summary(),
    );
    assert_eq!((m.p50, m.p95, m.p99, m.max), (r.p50, r.p95, r.p99, r.max));
    assert_eq!(m.p99_9, r.p99_9);
    assert_eq!(all.requests, 5 * (300 + 350 + 400));
    assert_eq!(all.requests, reference.count());
    assert_eq!(all.status_sorted()[&500], 30 * 5 + 35 * 5 + 40 * 5);
    assert_eq!(totals.all_scenarios().iterations, 5 * (300 + 350 + 400));
    // VUs add up per second.
    assert_eq!(totals.vus_peak, 15);
    // Requests by HTTP version and connections opened are summed over generators.
    assert_eq!(
        totals.protocols,
        pado_metrics::ProtocolCounts {
            requests_http2: 5 * (300 + 350 + 400),
            conns_http2: 1 + 2 + 3,
            conns_tls: 3,
            ..Default::default()
        }
    );

    let meta = out.read_meta().unwrap();
    assert_eq!(meta.segment, None);
    assert_eq!(
        meta.merged_from
            .iter()
            .map(|g| g.segment.index)
            .collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!((meta.workers, meta.cores_allowed), (6, 6));
    assert_eq!(meta.duration_s, 5.0);
    assert_eq!(meta.stages[0].target, 15.0, "stage targets summed");
    assert_eq!(meta.stages[0].from, Some(15.0));
    // Labelled as the whole test, not as segment 0's share of it.
    assert_eq!(meta.stages[0].label, "hold 15 VUs");
    assert_eq!(meta.scenarios[0].description, "15 VUs for 4s");
    assert_eq!(
        meta.scenarios[0].max_vus,
        Some(3 + 4 + 5),
        "VU ceilings summed"
    );
    assert!(meta
        .warnings
        .contains(&"segment 2/3: overloaded 2".to_string()));
    assert!(
        meta.notes
            .iter()
            .any(|n| n.contains("within 10 ms of each other")),
        "{:?}",
        meta.notes
    );

    // The generator's own figures are per generator, never summed into the timeline.
    let timeline = out.read_timeline().unwrap();
    assert!(timeline.iter().all(|r| r.generator.is_none()));
    let g = out.read_generators().unwrap().unwrap();
    assert_eq!(g.generators.len(), 3);
    let g1 = &g.generators[1];
    assert_eq!((g1.index, g1.requests, g1.failed), (1, 350 * 5, 35 * 5));
    assert_eq!(g1.seconds.len(), 5);
    assert_eq!(g1.seconds[0].cpu_ns, 200_000_000);
    assert!((g1.share - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(g1.start_skew_ms, Some(9.0));
    let mut own = LatencyHistogram::new();
    for d in segs[1].seconds.iter().flatten() {
        own.record(*d);
    }
    assert_eq!(g1.latency_ms.p95, own.summary().p95);

    // Failures: each generator had two of one kind; the merge keeps three.
    let f = out.read_failures().unwrap();
    assert_eq!(f.len(), 3);
}

#[test]
fn seconds_align_by_t_under_a_shared_start_and_by_wall_clock_otherwise() {
    let tmp = tmp();
    // Segment 1 has requests only in its second 0; segment 0 only in its second 1.
    let mut a = Seg::new(0, 2, vec![vec![], vec![1000; 7], vec![]]);
    let mut b = Seg::new(1, 2, vec![vec![2000; 3], vec![], vec![]]);
    b.started_at = "2026-01-01T00:00:00.700Z";
    let dirs = vec![write_seg(tmp.path(), &a), write_seg(tmp.path(), &b)];
    let (out, outcome) = merge_into(tmp.path(), &dirs);
    assert_eq!(outcome.seconds, 3);
    let tl = out.read_timeline().unwrap();
    assert_eq!(
        tl.iter().map(|r| r.requests()).collect::<Vec<_>>(),
        [3, 7, 0]
    );

    // No agreed start: segment 1 started 3.2 s after segment 0, so its second 0 is
    // the merged second 3.
    let tmp = super::tests::tmp();
    a.start_at = None;
    b.start_at = None;
    a.started_at = "2026-01-01T00:00:00.000Z";
    b.started_at = "2026-01-01T00:00:03.200Z";
    let dirs = vec![write_seg(tmp.path(), &a), write_seg(tmp.path(), &b)];
    let (out, outcome) = merge_into(tmp.path(), &dirs);
    assert_eq!(outcome.seconds, 6);
    let tl = out.read_timeline().unwrap();
    assert_eq!(
        tl.iter().map(|r| r.requests()).collect::<Vec<_>>(),
        [0, 7, 0, 3, 0, 0]
    );
    assert_eq!(
        tl.iter().map(|r| r.t).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    let meta = out.read_meta().unwrap();
    assert_eq!(meta.started_at, "2026-01-01T00:00:00.000Z");
    assert_eq!(meta.duration_s, 6.0);
    assert!(
        meta.notes.iter().any(|n| n.contains("within 3200 ms")),
        "{:?}",
        meta.notes
    );
    let g = out.read_generators().unwrap().unwrap();
    assert_eq!(g.generators[1].offset_s, 3);
    assert_eq!(g.generators[1].seconds[0].t, 3);
    // Its failure samples moved with it.
    let f = out.read_failures().unwrap();
    assert!(f.iter().any(|s| s.second == 4), "{f:?}");
}

fn err_of(dirs: &[PathBuf]) -> String {
    match plan(dirs) {
        Ok(_) => panic!("merge of {dirs:?} accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn what_is_not_one_test_is_refused_naming_the_directories() {
    let tmp = tmp();
    let a = write_seg(tmp.path(), &Seg::new(0, 2, vec![vec![1]]));
    let b = write_seg(tmp.path(), &Seg::new(1, 2, vec![vec![1]]));

    // A whole run.
    let whole = tmp.path().join("whole");
    let d = ResultDir::create(&whole).unwrap();
    let mut m = ResultDir::open(&a).unwrap().read_meta().unwrap();
    m.segment = None;
    d.write_meta(&m).unwrap();
    let e = err_of(&[a.clone(), whole.clone()]);
    assert!(
        e.contains("whole")
            && e.contains("is not one segment of a split test (run with --segment)"),
        "{e}"
    );

    // Another plan.
    let other_root = tmp.path().join("other");
    fs::create_dir_all(&other_root).unwrap();
    let mut s = Seg::new(1, 2, vec![vec![1]]);
    s.plan = "cd34ffff0000";
    let other = write_seg(&other_root, &s);
    let e = err_of(&[a.clone(), other.clone()]);
    assert!(
        e.contains("are segments of different tests: plan ab12cd34… vs cd34ffff…")
            && e.contains("seg0")
            && e.contains("other"),
        "{e}"
    );
    // Another count.
    let mut s = Seg::new(1, 3, vec![vec![1]]);
    s.plan = "ab12cd34ef56";
    let three = write_seg(&tmp.path().join("three"), &s);
    assert!(err_of(&[a.clone(), three]).contains("2 vs 3 segments"));

    // The same segment twice.
    let copy = tmp.path().join("copy");
    fs::create_dir_all(&copy).unwrap();
    for f in ["run.json", "timeline.jsonl", "summary.json"] {
        fs::copy(a.join(f), copy.join(f)).unwrap();
    }
    let e = err_of(&[a.clone(), copy, b.clone()]);
    assert!(e.contains("are both segment 0/2"), "{e}");
}

#[test]
fn missing_and_cut_short_segments_are_named() {
    let tmp = tmp();
    let a = write_seg(tmp.path(), &Seg::new(0, 4, vec![vec![5]; 4]));
    // Killed at 2 s of 4: run.json never finished, no summary, a torn last line.
    let mut k = Seg::new(1, 4, vec![vec![5]; 3]);
    k.finished = false;
    let killed = write_seg(tmp.path(), &k);
    let tl = killed.join("timeline.jsonl");
    let text = fs::read_to_string(&tl).unwrap();
    fs::write(&tl, &text[..text.len() - 40]).unwrap();
    let mut i = Seg::new(3, 4, vec![vec![5]; 4]);
    i.interrupted = true;
    let interrupted = write_seg(tmp.path(), &i);

    let p = plan(&[a.clone(), killed.clone(), interrupted.clone()]).unwrap();
    let problems = p.problems().to_vec();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(
        problems[0]
            .starts_with("segment 1/4 ended early at 2 s of 4 s: pado did not finish writing it"),
        "{problems:?}"
    );
    assert!(problems[0].contains("seg1"), "{problems:?}");
    assert_eq!(
        problems[1],
        "segment 2/4 missing: its share of the load was not sent"
    );
    assert!(
        problems[2].starts_with("segment 3/4 ended early at 4 s of 4 s: it was interrupted"),
        "{problems:?}"
    );
    let e = p.require_complete().unwrap_err().to_string();
    assert!(
        e.contains("segment 2/4 missing") && e.contains("--allow-partial"),
        "{e}"
    );

    // Allowed: merged from what is there, and marked.
    let out = ResultDir::create(tmp.path().join("merged")).unwrap();
    let outcome = p.write(&out).unwrap();
    assert_eq!(outcome.partial.len(), 3);
    let meta = out.read_meta().unwrap();
    assert!(meta.interrupted);
    assert!(
        meta.warnings[1].starts_with("PARTIAL RESULT: segment 2/4 missing"),
        "{:?}",
        meta.warnings
    );
    let g = out.read_generators().unwrap().unwrap();
    assert_eq!(g.partial, problems);
    assert_eq!(
        g.generators
            .iter()
            .map(|g| g.ended_early)
            .collect::<Vec<_>>(),
        [false, true, true]
    );
    // The killed one's two complete seconds count, its torn line does not.
    assert_eq!(out.read_totals().unwrap().overall().requests, 4 + 2 + 4);

    // A timeline shorter than the plan, with a finished run.json, is cut short too.
    let short_root = tmp.path().join("short");
    let short = write_seg(&short_root, &Seg::new(1, 2, vec![vec![5]; 2]));
    let a2 = write_seg(&short_root, &Seg::new(0, 2, vec![vec![5]; 6]));
    let p = plan(&[a2, short]).unwrap();
    assert_eq!(p.problems().len(), 1);
    assert!(
        p.problems()[0]
            .starts_with("segment 1/2 ended early at 2 s of 6 s: its timeline stops there"),
        "{:?}",
        p.problems()
    );
}

/// A segment given no VU (3 segments of a 2-VU test) has a timeline of its first
/// second only, though its run lasted the test: it is whole, not ended early. A
/// segment with VUs whose run was as short as its timeline still is cut short.
#[test]
fn a_segment_with_no_share_of_the_load_is_whole_when_its_run_lasted_the_test() {
    let tmp = tempfile::tempdir().unwrap();
    let busy = write_seg(tmp.path(), &Seg::new(0, 2, vec![vec![5]; 6]));
    let mut idle = Seg::new(1, 2, vec![vec![]; 1]);
    idle.idle_for = Some(6.01);
    let idle = write_seg(tmp.path(), &idle);
    let p = plan(&[busy.clone(), idle]).unwrap();
    assert!(p.problems().is_empty(), "{:?}", p.problems());

    // The same idle timeline from a run that ended at once is cut short.
    let early_root = tmp.path().join("early");
    let busy = write_seg(&early_root, &Seg::new(0, 2, vec![vec![5]; 6]));
    let mut early = Seg::new(1, 2, vec![vec![]; 1]);
    early.idle_for = Some(0.01);
    let early = write_seg(&early_root, &early);
    let p = plan(&[busy, early]).unwrap();
    assert_eq!(p.problems().len(), 1, "{:?}", p.problems());
}

/// Memory is bounded by construction: the merge pulls one second of each timeline
/// at a time. A timeline far longer than the others streams through while the
/// shorter ones are exhausted, and each merged second is whole.
#[test]
fn timelines_of_different_lengths_stream_in_step() {
    let tmp = tmp();
    let a = write_seg(tmp.path(), &Seg::new(0, 2, vec![vec![10]; 200]));
    let b = write_seg(tmp.path(), &Seg::new(1, 2, vec![vec![10, 20]; 199]));
    let p = plan(&[a, b]).unwrap();
    // 199 of 200 seconds is within the one-second tolerance of the last flush.
    assert!(p.problems().is_empty(), "{:?}", p.problems());
    let out = ResultDir::create(tmp.path().join("m")).unwrap();
    p.write(&out).unwrap();
    let mut n = 0;
    out.for_each_second(|r| {
        assert_eq!(r.requests(), if r.t < 199 { 3 } else { 1 }, "t={}", r.t);
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 200);
}

/// A damaged line in one generator's timeline stops the merge with an error naming
/// that file and line (the other readers are stopped, nothing hangs).
#[test]
fn a_corrupt_line_names_its_file_and_line() {
    let tmp = tmp();
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| write_seg(tmp.path(), &Seg::new(i, 3, vec![vec![7]; 50])))
        .collect();
    let tl = dirs[1].join("timeline.jsonl");
    let text = fs::read_to_string(&tl).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[20] = "{\"t\":20,\"vus\":1,\"vus_max\":1,\"series\":[{\"name\":\"get\",\"requests\":5,\"failed\":0,\"bytes_sent\":0,\"bytes_received\":0,\"status\":{\"200\":1}}]}";
    fs::write(&tl, lines.join("\n") + "\n").unwrap();
    let out = ResultDir::create(tmp.path().join("m")).unwrap();
    let e = plan(&dirs).unwrap().write(&out).unwrap_err().to_string();
    assert!(
        e.contains("seg1/timeline.jsonl:21:") && e.contains("corrupt"),
        "{e}"
    );
}

/// Segment `i` of 2 with `n` seconds of 3 requests each, its timeline's lines then
/// rewritten by `edit` (a planted corruption); returns both directories.
fn two_with_edited_timeline(
    root: &Path,
    n: usize,
    edit: impl FnOnce(&mut Vec<String>),
) -> Vec<PathBuf> {
    let dirs = vec![
        write_seg(root, &Seg::new(0, 2, vec![vec![1000; 3]; n])),
        write_seg(root, &Seg::new(1, 2, vec![vec![1000; 3]; n])),
    ];
    let tl = dirs[1].join("timeline.jsonl");
    let mut lines: Vec<String> = fs::read_to_string(&tl)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    edit(&mut lines);
    fs::write(&tl, lines.join("\n") + "\n").unwrap();
    dirs
}

/// The same line with another `t`.
fn with_t(line: &str, t: u64) -> String {
    let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["t"] = serde_json::json!(t);
    v.to_string()
}

/// Bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        bytes_under(&p)
                    } else {
                        e.metadata().map_or(0, |m| m.len())
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A last second at t = 4000000000 (a plan of 4 s) is refused before anything is
/// written, naming the file, its line and the field; the merge does not write
/// billions of empty seconds.
#[test]
fn a_second_far_past_the_plan_is_refused_with_file_line_and_field() {
    let tmp = tmp();
    let dirs = two_with_edited_timeline(tmp.path(), 5, |lines| {
        let far = with_t(&lines[4], 4_000_000_000);
        lines.push(far);
    });
    let t = std::time::Instant::now();
    let e = err_of(&dirs);
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        e.contains("seg1/timeline.jsonl:6:") && e.contains("field `t`: second 4000000000"),
        "{e}"
    );
    assert!(e.contains("planned for 4 s"), "{e}");
    // Within what the plan allows (4 s + the margin after it), the same gap merges.
    let tmp2 = super::tests::tmp();
    let dirs = two_with_edited_timeline(tmp2.path(), 5, |lines| {
        let ok = with_t(&lines[4], 4 + bound::PAST_PLAN_S as u64 - 1);
        lines.push(ok);
    });
    let (out, outcome) = merge_into(tmp2.path(), &dirs);
    assert_eq!(outcome.seconds, 4 + bound::PAST_PLAN_S as u32);
    assert!(
        bytes_under(out.path()) < 4 << 20,
        "{}",
        bytes_under(out.path())
    );
}

/// A segment that claims to have started in 2099 (no agreed start: seconds placed
/// by wall clock) is refused naming its run.json, the line and `started_at`.
#[test]
fn a_segment_starting_in_2099_is_refused() {
    let tmp = tmp();
    let mut a = Seg::new(0, 2, vec![vec![1000; 3]; 5]);
    let mut b = Seg::new(1, 2, vec![vec![1000; 3]; 5]);
    a.start_at = None;
    b.start_at = None;
    b.started_at = "2099-01-01T00:00:00.000Z";
    let dirs = vec![write_seg(tmp.path(), &a), write_seg(tmp.path(), &b)];
    let e = err_of(&dirs);
    let run_json = fs::read_to_string(dirs[1].join("run.json")).unwrap();
    let line = run_json
        .lines()
        .position(|l| l.contains("\"started_at\""))
        .unwrap()
        + 1;
    assert!(
        e.contains(&format!("seg1/run.json:{line}:"))
            && e.contains("field `started_at`: 2099-01-01T00:00:00.000Z"),
        "{e}"
    );
}

/// A second far ahead of the lines after it (so not the last line) stops the
/// merge at that line instead of dropping the seconds after it.
#[test]
fn a_second_far_ahead_in_the_middle_is_refused() {
    let tmp = tmp();
    let dirs = two_with_edited_timeline(tmp.path(), 6, |lines| {
        lines[2] = with_t(&lines[2], 4_000_000_000);
    });
    let out = ResultDir::create(tmp.path().join("m")).unwrap();
    let t = std::time::Instant::now();
    let e = plan(&dirs).unwrap().write(&out).unwrap_err().to_string();
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        e.contains("seg1/timeline.jsonl:3:") && e.contains("field `t`: second 4000000000"),
        "{e}"
    );
}

/// A repeated second and one out of order were added twice or into the wrong
/// second; now they are refused, saying which line and which second.
#[test]
fn repeated_and_reordered_seconds_are_refused() {
    let tmp = tmp();
    let dirs = two_with_edited_timeline(tmp.path(), 5, |lines| {
        let again = lines[2].clone();
        lines.insert(3, again);
    });
    let out = ResultDir::create(tmp.path().join("m")).unwrap();
    let e = plan(&dirs).unwrap().write(&out).unwrap_err().to_string();
    assert!(
        e.contains("seg1/timeline.jsonl:4:") && e.contains("second 2 repeats second 2"),
        "{e}"
    );

    let tmp = super::tests::tmp();
    let dirs = two_with_edited_timeline(tmp.path(), 5, |lines| lines.swap(1, 3));
    let out = ResultDir::create(tmp.path().join("m")).unwrap();
    let e = plan(&dirs).unwrap().write(&out).unwrap_err().to_string();
    assert!(
        e.contains("seg1/timeline.jsonl:3:") && e.contains("second 2 goes back from second 3"),
        "{e}"
    );

    // The truth, untouched: 2 generators × 5 seconds × 3 requests, 6 a second.
    let tmp = super::tests::tmp();
    let dirs = two_with_edited_timeline(tmp.path(), 5, |_| {});
    let (out, _) = merge_into(tmp.path(), &dirs);
    let tl = out.read_timeline().unwrap();
    assert_eq!(
        tl.iter().map(|r| r.requests()).collect::<Vec<_>>(),
        [6, 6, 6, 6, 6]
    );
}

#[test]
fn a_fifo_in_a_result_directory_is_refused_before_it_is_opened() {
    let tmp = tmp();
    let a = write_seg(tmp.path(), &Seg::new(0, 2, vec![vec![1]]));
    let b = write_seg(tmp.path(), &Seg::new(1, 2, vec![vec![1]]));
    // Planted: `timeline.jsonl` a FIFO nobody writes to; opening it to read blocks.
    let tl = a.join(TIMELINE_FILE);
    fs::remove_file(&tl).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&tl)
        .status()
        .unwrap();
    assert!(made.success());
    let dirs = vec![a.clone(), b.clone()];
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(err_of(&dirs));
    });
    let e = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the merge blocked on the FIFO");
    assert!(e.contains(&tl.display().to_string()), "{e}");
    assert!(e.contains("is a FIFO, not a regular file"), "{e}");
    // The same directories with a regular timeline are accepted.
    fs::remove_file(&tl).unwrap();
    let c = write_seg(&tmp.path().join("again"), &Seg::new(0, 2, vec![vec![1]]));
    assert!(plan(&[c, b]).is_ok());
}

#[test]
fn whole_test_labels_are_built_from_the_summed_levels() {
    assert_eq!(whole_test_label("hold 3 VUs", Some(6.0), 6.0), "hold 6 VUs");
    assert_eq!(
        whole_test_label("ramp 0→3 VUs", Some(0.0), 7.0),
        "ramp 0→7 VUs"
    );
    assert_eq!(whole_test_label("hold 1 VU", Some(2.0), 2.0), "hold 2 VUs");
    assert_eq!(whole_test_label("hold 1 VU", Some(1.0), 1.0), "hold 1 VU");
    assert_eq!(
        whole_test_label("ramp 50→100 it/s", Some(100.0), 200.0),
        "ramp 100→200 it/s"
    );
    // Not a label pado writes for a stage: kept.
    assert_eq!(whole_test_label("피크 구간", Some(2.0), 4.0), "피크 구간");
    assert_eq!(
        whole_test_description("segment 1/2 (1/2 of the load): 3 VUs; whole test: 6 VUs for 10s"),
        "6 VUs for 10s"
    );
    assert_eq!(whole_test_description("6 VUs for 10s"), "6 VUs for 10s");
}

/// A generator that wrote no line for seconds 2 and 3 while its run went on (it
/// wrote seconds before and after them) still had its 5 VUs running: the merged
/// timeline keeps 10 VUs, as a single run carries its VUs over a second no worker
/// reported, instead of dropping to the other generator's 5. A generator whose
/// timeline ended early carries nothing past its end.
#[test]
fn a_second_one_generator_never_wrote_keeps_its_vus() {
    let tmp = tmp();
    let dirs = two_with_edited_timeline(tmp.path(), 6, |lines| {
        lines.drain(2..4);
    });
    let (out, _) = merge_into(tmp.path(), &dirs);
    let tl = out.read_timeline().unwrap();
    let vus: Vec<(u32, u32, u32)> = tl.iter().map(|r| (r.t, r.vus, r.vus_max)).collect();
    assert_eq!(
        vus,
        (0..6).map(|t| (t, 10, 10)).collect::<Vec<_>>(),
        "merged VUs stay level"
    );
    // The carried seconds completed nothing of that generator's.
    assert_eq!(
        tl.iter().map(|r| r.requests()).collect::<Vec<_>>(),
        [6, 6, 3, 3, 6, 6]
    );

    let tmp = super::tests::tmp();
    let dirs = two_with_edited_timeline(tmp.path(), 6, |lines| {
        lines.truncate(4);
    });
    let (out, _) = merge_into(tmp.path(), &dirs);
    let tl = out.read_timeline().unwrap();
    assert_eq!(
        tl.iter().map(|r| r.vus).collect::<Vec<_>>(),
        [10, 10, 10, 10, 5, 5]
    );
}

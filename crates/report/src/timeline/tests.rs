use super::*;
use crate::csv_export::timeline_csv;
use crate::html::render_html;
use crate::stages::test_support::*;
use crate::summary::{build, load};
use pado_results::ResultDir;

/// A result directory in a temporary directory removed when the test ends (the
/// `TempDir` must be held as long as the `ResultDir` is used).
fn tmpdir(name: &str) -> (tempfile::TempDir, ResultDir) {
    let t = tempfile::Builder::new()
        .prefix(&format!("pado-report-{name}-"))
        .tempdir()
        .unwrap();
    let dir = ResultDir::create(t.path().join("run")).unwrap();
    (t, dir)
}

/// Second `t` of a synthetic run: three steps whose latencies move with `t`, one
/// of them failing with 503s.
fn synthetic_second(t: u32) -> SecondRecord {
    let wobble = (t % 10) as u64;
    // Every third second, the checkout step fails.
    let checkout_status = [503, 200, 200][t as usize % 3];
    second(
        t,
        t % 50 + 1,
        vec![
            series("login", 5, 200, 500 + 50 * wobble),
            series("search", 8, 200, 800 + 7 * wobble),
            series("checkout", 2, checkout_status, 1_500),
        ],
    )
}

fn write_run(dir: &ResultDir, meta: &RunMeta, seconds: u32) {
    dir.write_meta(meta).unwrap();
    let mut w = dir.timeline_writer().unwrap();
    for t in 0..seconds {
        w.write(&synthetic_second(t)).unwrap();
    }
}

fn three_stages(end: f64) -> Vec<pado_results::StageMark> {
    let a = (end / 6.0).round();
    let b = (end * 5.0 / 6.0).round();
    vec![
        stage(0, 0.0, a, "ramp"),
        stage(1, a, b, "hold"),
        stage(2, b, end, "down"),
    ]
}

/// A long timeline read from disk, summarised and rendered: the per-second data kept
/// is a few hundred bytes per second, not the histograms. An hour in release; 20
/// minutes in debug builds, where decoding histograms is slow (the bound is per
/// second, so it says the same).
#[test]
fn a_long_timeline_loads_in_bounded_memory() {
    const SECONDS: u32 = if cfg!(debug_assertions) { 1_200 } else { 3_600 };
    let (_tmp_dir, dir) = tmpdir("hour");
    let mut m = meta("hour", SECONDS as f64);
    m.stages = three_stages(SECONDS as f64);
    write_run(&dir, &m, SECONDS);

    let r = load(&dir).unwrap();
    let s = build(&r).unwrap();
    let html = render_html(&r, &s);
    let csv = timeline_csv(&r);

    assert_eq!(r.points.len(), SECONDS as usize);
    let heap = r.timeline_heap_bytes();
    let per_second = heap / SECONDS as usize;
    // Three steps: SecondPoint (~140 B) + 3 step rows (~100 B each) + errors.
    assert!(per_second < 1024, "{per_second} B per second");
    assert!(heap < 20 << 20, "{heap} B");
    // Even four hours stay far below that.
    assert!(per_second * 14_400 < 20 << 20, "{per_second} B per second");
    assert_eq!(s.requests, SECONDS as u64 * 15);
    assert_eq!(s.failed, (SECONDS as u64).div_ceil(3) * 2);
    assert_eq!(
        r.stages.iter().map(|st| st.requests).sum::<u64>(),
        s.requests
    );
    assert!((r.stages[1].rps - 15.0).abs() < 1e-9);
    assert_eq!(csv.lines().count(), 1 + SECONDS as usize * 4);
    assert!(html.len() < 400_000, "{}", html.len());
    let _ = std::fs::remove_dir_all(dir.path());
}

/// The streaming fold gives what summing the whole timeline in memory gives.
#[test]
fn streaming_equals_in_memory_computation() {
    const SECONDS: u32 = 60;
    let (_tmp_dir, dir) = tmpdir("small");
    let mut m = meta("small", SECONDS as f64);
    m.stages = three_stages(SECONDS as f64);
    write_run(&dir, &m, SECONDS);
    let r = load(&dir).unwrap();
    let s = build(&r).unwrap();

    let recs = dir.read_timeline().unwrap();
    let mut totals = Totals::default();
    for rec in &recs {
        totals.add_second(rec);
    }
    assert_eq!(r.totals, totals);
    let requests: u64 = recs.iter().map(|rec| rec.requests()).sum();
    assert_eq!(s.requests, requests);
    assert_eq!(
        s.latency_ms.p95,
        totals.overall().phase(Phase::Duration).summary().p95
    );
    for (st, mark) in r.stages.iter().zip(&m.stages) {
        let mut all = SeriesStats::new(SeriesKey::named("all"));
        let mut n = 0;
        for rec in recs
            .iter()
            .filter(|rec| second_in_window(rec.t, mark.start_s, mark.end_s))
        {
            n += 1;
            all.merge(&rec.overall());
        }
        assert_eq!(st.seconds, n);
        assert_eq!(st.rps, all.requests as f64 / n as f64);
        assert_eq!(st.latency_ms, all.phase(Phase::Duration).summary());
        assert_eq!(st.errors, all.error_breakdown());
    }
    for (p, rec) in r.points.iter().zip(&recs) {
        let all = rec.overall();
        assert_eq!(p.all.requests, all.requests);
        assert_eq!(p.all.latency, PointLatency::of(all.phase(Phase::Duration)));
    }
    // And the same as folding the records in memory.
    let again = LoadedRun::from_seconds(m, recs);
    assert_eq!(again.points, r.points);
    assert_eq!(again.stages, r.stages);
    let _ = std::fs::remove_dir_all(dir.path());
}

/// Generator figures survive the file and the fold: per second as the self-check
/// reads them, and every lag sample of the run merged.
#[test]
fn generator_figures_are_folded_from_the_file() {
    let (_tmp_dir, dir) = tmpdir("gen");
    dir.write_meta(&meta("gen", 3.0)).unwrap();
    let mut w = dir.timeline_writer().unwrap();
    let mut recs = Vec::new();
    for t in 0..3 {
        let rec = second(t, 2, vec![series("a", 3, 200, 1_000)]);
        let rec = with_generator(rec, 0.5 + 0.2 * t as f64, 0.1, 4_000 * (t as u64 + 1));
        let rec = with_generator(rec, 0.2, 0.3, 900);
        w.write(&rec).unwrap();
        recs.push(rec);
    }
    // A second only the teardown runner reported: no figures.
    let last = second(3, 0, vec![]);
    w.write(&last).unwrap();
    drop(w);
    let r = load(&dir).unwrap();
    let mut lag = LagHistogram::default();
    for (p, rec) in r.points.iter().zip(&recs) {
        let g = rec.generator.as_ref().unwrap();
        lag.merge(&g.lag);
        let gp = p.generator.unwrap();
        assert_eq!(gp, gen_second(rec.t, g));
        assert_eq!(gp.lag_max_ms, 4.0 * (rec.t as f64 + 1.0));
        assert!((gp.busy_max - (0.5 + 0.2 * rec.t as f64)).abs() < 1e-9);
        assert!((gp.cores - (0.7 + 0.2 * rec.t as f64)).abs() < 1e-9);
        assert!((gp.wait_share.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(gp.wait_max, Some(0.3));
    }
    assert!(r.points[3].generator.is_none());
    assert_eq!(r.generator_lag, lag);
    assert_eq!(r.generator_lag.count(), 3 * 180);
    let _ = std::fs::remove_dir_all(dir.path());
}

#[test]
fn points_hold_what_the_seconds_held() {
    let mut tagged = SeriesStats::new(SeriesKey {
        name: "a".into(),
        tags: vec![("class".into(), "rare".into())],
    });
    for _ in 0..5 {
        tagged.record(&sample(503, 9000));
    }
    let recs = vec![
        second(
            0,
            3,
            vec![
                series("b", 4, 200, 2000),
                series("a", 10, 200, 1000),
                tagged,
            ],
        ),
        second(1, 1, vec![]),
    ];
    let r = LoadedRun::from_seconds(meta("pts", 2.0), recs.clone());
    assert_eq!(r.points.len(), 2);
    let p = &r.points[0];
    assert_eq!((p.t, p.vus, p.vus_max), (0, 3, 5));
    assert_eq!(p.all.requests, 19);
    assert_eq!(p.all.failed, 5);
    assert_eq!(p.all.bytes_received, 19_000);
    let overall = recs[0].overall();
    let h = overall.phase(Phase::Duration);
    assert_eq!(p.all.latency, PointLatency::of(h));
    // Steps in name order, tags merged.
    let names: Vec<&str> = p
        .steps
        .iter()
        .map(|s| r.step_names[s.0 as usize].as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(p.steps[0].1.requests, 15);
    assert_eq!(p.steps[0].1.latency.unwrap().max_us, h.max_us());
    let http_503 = r.error_names.iter().position(|n| n == "http_503").unwrap();
    assert_eq!(p.error(http_503 as u32), 5);
    assert!(p.step(99).is_none());
    let empty = &r.points[1];
    assert_eq!(empty.all, PointStats::default());
    assert!(empty.steps.is_empty() && empty.errors.is_empty());
    assert_eq!(r.totals.overall().requests, 19);
}

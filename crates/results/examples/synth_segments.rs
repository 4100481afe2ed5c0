//! Writes synthetic segment result directories for the `pado merge` benchmark
//! (`bench/merge.sh`): N segments of one split test, each `SECONDS` long, with a few
//! steps, every phase histogram per second, status counts, scenario and generator
//! figures, written through the real writer types.
//!
//! Usage: `synth_segments OUT_DIR [SEGMENTS=16] [SECONDS=3600] [REQ_PER_STEP_SECOND=150]`
//!
//! Every segment gets its own samples (a seeded generator per segment).

use std::path::PathBuf;

use pado_metrics::{
    GeneratorStats, Interval, Phases, RequestSample, ScenarioStats, SecondRecord, SeriesKey,
    SeriesStats,
};
use pado_results::result_dir::{SegmentMeta, SUMMARY_FILE};
use pado_results::{ResultDir, RunMeta, ScenarioMeta, StageMark, ThresholdSpec, FORMAT_VERSION};

/// A small xorshift generator: reproducible, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Roughly log-normal latency in µs around `median_us`.
    fn latency(&mut self, median_us: u64) -> u64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let v = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let z = (-2.0 * u.max(1e-12).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
        (median_us as f64 * (0.5 * z).exp()) as u64
    }
}

const STEPS: [(&str, u64); 4] = [
    ("GET /", 2_000),
    ("GET /search", 15_000),
    ("POST /login", 8_000),
    ("GET /posts/{id}", 4_000),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out = PathBuf::from(
        args.get(1)
            .expect("usage: synth_segments OUT_DIR [SEGMENTS] [SECONDS] [REQ]"),
    );
    let n: u32 = args.get(2).map_or(16, |s| s.parse().unwrap());
    let seconds: u32 = args.get(3).map_or(3600, |s| s.parse().unwrap());
    let per: u64 = args.get(4).map_or(150, |s| s.parse().unwrap());
    for i in 0..n {
        let path = out.join(format!("seg{i:02}"));
        let dir = ResultDir::create(&path).unwrap();
        let meta = segment_meta(i, n, seconds);
        dir.write_meta(&meta).unwrap();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((u64::from(i) + 1) * 0x1000_0001));
        let mut w = dir.timeline_writer().unwrap();
        for t in 0..seconds {
            let rec = second(&mut rng, t, per);
            w.write(&rec).unwrap();
        }
        drop(w);
        std::fs::write(path.join(SUMMARY_FILE), "{}\n").unwrap();
        eprintln!("wrote {}", path.display());
    }
}

/// Segment `i` of `n`'s `run.json`: one ramping scenario in three stages.
fn segment_meta(i: u32, n: u32, seconds: u32) -> RunMeta {
    let third = f64::from(seconds) / 3.0;
    let stage = |index: usize, a: f64, b: f64, from: f64, to: f64, label: &str| StageMark {
        scenario: "default".into(),
        index,
        start_s: a,
        end_s: b,
        label: label.into(),
        target: to,
        from: Some(from),
    };
    let meta = RunMeta {
        format: "pado-result".into(),
        version: FORMAT_VERSION,
        name: "one hour, split".into(),
        pado_version: "bench".into(),
        started_at: format!("2026-01-01T00:00:00.{:03}Z", 3 + i),
        duration_s: f64::from(seconds),
        workers: 2,
        cores_allowed: 2,
        scenarios: vec![ScenarioMeta {
            name: "default".into(),
            executor: "ramping-vus".into(),
            description: "0→50→50→0 VUs".into(),
            open_model: false,
            max_vus: None,
            scripted: false,
        }],
        stages: vec![
            stage(0, 0.0, third, 0.0, 50.0, "ramp 0→50 VUs"),
            stage(1, third, 2.0 * third, 50.0, 50.0, "hold 50 VUs"),
            stage(
                2,
                2.0 * third,
                f64::from(seconds),
                50.0,
                0.0,
                "ramp 50→0 VUs",
            ),
        ],
        thresholds: vec![ThresholdSpec {
            metric: "http_req_duration".into(),
            expr: "p(95) < 100".into(),
            abort_on_fail: false,
            window_s: None,
        }],
        segment: Some(SegmentMeta {
            index: i,
            count: n,
            weights: vec![1; n as usize],
            plan_id: "bench0000plan".into(),
            start_at: Some("2026-01-01T00:00:00.000Z".into()),
            start_skew_ms: Some(3.0 + f64::from(i)),
            ran_setup: i == 0,
        }),
        ..Default::default()
    };
    meta
}

/// Second `t` of a segment: every step's `per` requests and the two workers' own figures.
fn second(rng: &mut Rng, t: u32, per: u64) -> SecondRecord {
    let mut series = Vec::new();
    for (name, median) in STEPS {
        let mut s = SeriesStats::new(SeriesKey::named(name));
        for k in 0..per {
            let d = rng.latency(median);
            let status = match rng.next() % 200 {
                0 => 500,
                1 => 404,
                _ => 200,
            };
            s.record(&RequestSample {
                status,
                failed: status >= 400,
                phases: Phases {
                    duration_us: d,
                    blocked_us: if k == 0 { 300 } else { 1 },
                    connecting_us: if k == 0 { 250 } else { 0 },
                    sending_us: 20 + rng.next() % 40,
                    waiting_us: d * 9 / 10,
                    receiving_us: d / 10,
                    ..Default::default()
                },
                bytes_sent: 120,
                bytes_received: 900,
                ..Default::default()
            });
        }
        series.push(s);
    }
    let mut sc = ScenarioStats::new("default");
    sc.iterations = per;
    for _ in 0..per {
        sc.iteration_duration.record(rng.latency(30_000));
    }
    let mut rec = SecondRecord::new(t);
    for wk in 0..2u64 {
        let mut g = GeneratorStats {
            wall_ns: 1_000_000_000,
            cpu_ns: 150_000_000 + rng.next() % 100_000_000,
            wait_ns: Some(rng.next() % 10_000_000),
            ..Default::default()
        };
        for _ in 0..100 {
            g.lag.record(rng.next() % 2_000);
        }
        rec.absorb(Interval {
            worker: wk as usize,
            second: t,
            vus: 25,
            vus_max: 25,
            series: if wk == 0 {
                std::mem::take(&mut series)
            } else {
                Vec::new()
            },
            scenarios: if wk == 0 {
                vec![sc.clone()]
            } else {
                Vec::new()
            },
            generator: Some(g),
            ..Default::default()
        });
    }
    rec
}

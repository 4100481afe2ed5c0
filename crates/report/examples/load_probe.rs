//! Peak-memory probe for loading long result directories.
//!
//! `load_probe gen DIR SECONDS` writes a synthetic run of three steps with realistic
//! latency spreads (120 distinct seconds written with the timeline writer, repeated);
//! `load_probe report DIR` loads it, builds the summary and renders the HTML report
//! and the CSV export, as `pado report` does (writing them and `summary.json` to OUT
//! when given). Measure with `/usr/bin/time -v`:
//!
//! ```text
//! cargo run --release -p pado-report --example load_probe -- gen /tmp/run4h 14400
//! /usr/bin/time -v target/release/examples/load_probe report /tmp/run4h
//! ```

use std::io::{BufRead, BufReader, BufWriter, Write};

use pado_metrics::{Interval, Phases, RequestSample, SecondRecord, SeriesKey, SeriesStats};
use pado_results::{ResultDir, RunMeta, StageMark};

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn synthetic_second(t: u32, rng: &mut Lcg) -> SecondRecord {
    let mut series: Vec<SeriesStats> = ["login", "search", "checkout"]
        .iter()
        .map(|n| SeriesStats::new(SeriesKey::named(*n)))
        .collect();
    for (i, s) in series.iter_mut().enumerate() {
        for _ in 0..300 {
            let base = 5_000.0 + 40_000.0 * i as f64 * rng.next();
            let mut dur = (base * (1.0 + 20.0 * rng.next().powi(12))) as u64;
            let failed = rng.next() < 0.01;
            if failed && i == 2 {
                dur = 3_000_000;
            }
            s.record(&RequestSample {
                status: if failed { 503 } else { 200 },
                failed,
                phases: Phases {
                    duration_us: dur,
                    waiting_us: dur * 85 / 100,
                    sending_us: dur / 100,
                    receiving_us: dur * 14 / 100,
                    blocked_us: if rng.next() < 0.05 { 3_000 } else { 5 },
                    connecting_us: if rng.next() < 0.05 { 1_500 } else { 0 },
                    tls_us: if rng.next() < 0.05 { 4_000 } else { 0 },
                    dns_us: 0,
                },
                bytes_sent: 300,
                bytes_received: 4_000,
                ..Default::default()
            });
        }
    }
    let mut rec = SecondRecord::new(t);
    rec.absorb(Interval {
        vus: 50,
        vus_max: 60,
        series,
        ..Default::default()
    });
    rec
}

fn gen(dir: &str, seconds: u32) {
    let d = ResultDir::create(dir).unwrap();
    let third = seconds as f64 / 3.0;
    let stage = |index: usize, start_s: f64, end_s: f64, label: &str| StageMark {
        scenario: "default".into(),
        index,
        start_s,
        end_s,
        label: label.into(),
        target: 50.0,
        from: Some(50.0),
    };
    d.write_meta(&RunMeta {
        format: "pado-result".into(),
        version: pado_results::FORMAT_VERSION,
        name: "probe".into(),
        pado_version: "probe".into(),
        started_at: "2025-01-01T00:00:00Z".into(),
        duration_s: seconds as f64,
        workers: 2,
        stages: vec![
            stage(0, 0.0, third, "ramp"),
            stage(1, third, 2.0 * third, "hold"),
            stage(2, 2.0 * third, seconds as f64, "down"),
        ],
        ..Default::default()
    })
    .unwrap();
    // 120 distinct seconds through the writer, then repeated with the right `t`.
    let distinct = seconds.min(120);
    let mut rng = Lcg(7);
    let mut w = d.timeline_writer().unwrap();
    for t in 0..distinct {
        w.write(&synthetic_second(t, &mut rng)).unwrap();
    }
    drop(w);
    let path = d.path().join(pado_results::result_dir::TIMELINE_FILE);
    let lines: Vec<String> = BufReader::new(std::fs::File::open(&path).unwrap())
        .lines()
        .map(|l| l.unwrap())
        .collect();
    let mut out = BufWriter::new(std::fs::File::create(&path).unwrap());
    for t in 0..seconds {
        let line = &lines[(t % distinct) as usize];
        let rest = &line[line.find(',').unwrap()..];
        writeln!(out, "{{\"t\":{t}{rest}").unwrap();
    }
}

fn report(dir: &str, out: Option<&String>) {
    let d = ResultDir::open(dir).unwrap();
    let run = pado_report::load(&d).unwrap();
    eprintln!(
        "{} seconds, per-second data {} B ({} B per second)",
        run.points.len(),
        run.timeline_heap_bytes(),
        run.timeline_heap_bytes() / run.points.len().max(1)
    );
    let s = pado_report::build(&run).unwrap();
    let html = pado_report::html::render_html(&run, &s);
    let csv = pado_report::csv_export::timeline_csv(&run);
    println!(
        "requests {} p95 {} ms, html {} B, csv {} B",
        s.requests,
        s.latency_ms.p95,
        html.len(),
        csv.len()
    );
    if let Some(out) = out {
        let out = std::path::Path::new(out);
        std::fs::create_dir_all(out).unwrap();
        std::fs::write(out.join("report.html"), &html).unwrap();
        std::fs::write(out.join("timeline.csv"), &csv).unwrap();
        let json = serde_json::to_string_pretty(&s).unwrap();
        std::fs::write(out.join("summary.json"), json).unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") => gen(&args[2], args[3].parse().unwrap()),
        Some("report") => report(&args[2], args.get(3)),
        _ => eprintln!("usage: load_probe gen DIR SECONDS | load_probe report DIR [OUT]"),
    }
}

//! Per-second CSV export of the timeline (`--export csv`): one `all` row per second and
//! one row per step, for spreadsheets and plotting tools.

use std::collections::BTreeSet;

use crate::summary::LoadedRun;
use crate::timeline::{PointLatency, PointStats, SecondPoint};

/// Column names of [`timeline_csv`], in order.
pub const TIMELINE_COLUMNS: [&str; 15] = [
    "t",
    "step",
    "vus",
    "vus_max",
    "requests",
    "failed",
    "rps",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "mean_ms",
    "bytes_received",
    "bytes_sent",
];

/// Name of the row that sums every step of a second.
pub const ALL_ROW: &str = "all";

/// The timeline as CSV (RFC 4180, `\n` line ends): header [`TIMELINE_COLUMNS`], then
/// for every second of the timeline an `all` row followed by one row per step name
/// that occurs anywhere in the run (tags merged), in name order, so each second has
/// the same rows. `rps` is the requests completed in that second. Latency columns are
/// empty when the row has no requests.
pub fn timeline_csv(run: &LoadedRun) -> String {
    let steps: BTreeSet<&str> = run
        .totals
        .series
        .iter()
        .map(|s| s.key.name.as_str())
        .collect();
    // Each step name with its index in the points (None: never seen in a second).
    let steps: Vec<(&str, Option<u32>)> = steps
        .into_iter()
        .map(|name| {
            let idx = run.step_names.iter().position(|n| n == name);
            (name, idx.map(|i| i as u32))
        })
        .collect();
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing to a Vec cannot fail.
    let _ = w.write_record(TIMELINE_COLUMNS);
    let none = PointStats::default();
    for p in &run.points {
        let _ = w.write_record(row(p, ALL_ROW, &p.all));
        for &(name, idx) in &steps {
            let st = idx.and_then(|i| p.step(i)).unwrap_or(&none);
            let _ = w.write_record(row(p, name, st));
        }
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

fn row(p: &SecondPoint, step: &str, s: &PointStats) -> Vec<String> {
    let lat =
        |f: fn(&PointLatency) -> f64| s.latency.as_ref().map(f).map(fmt_ms).unwrap_or_default();
    vec![
        p.t.to_string(),
        text_cell(step),
        p.vus.to_string(),
        p.vus_max.to_string(),
        s.requests.to_string(),
        s.failed.to_string(),
        s.requests.to_string(),
        lat(|l| ms(l.p50_us)),
        lat(|l| ms(l.p90_us)),
        lat(|l| ms(l.p95_us)),
        lat(|l| ms(l.p99_us)),
        lat(|l| ms(l.max_us)),
        lat(|l| l.mean_us / 1000.0),
        s.bytes_received.to_string(),
        s.bytes_sent.to_string(),
    ]
}

use pado_base::units::{ms_exact as fmt_ms, us_to_ms as ms};

/// A text cell (a step's name, someone else's words) that a spreadsheet will show as
/// text: one starting with `=`, `+`, `-`, `@`, a tab or a carriage return would be
/// read by Excel, LibreOffice or Google Sheets as a formula (CSV injection:
/// `=HYPERLINK(...)`, `=cmd|...`), so it gets a leading `'`, as OWASP's CSV injection
/// guidance says. Only text cells go through here: the numbers of the other columns
/// (a `-1.5` included) stay numbers.
fn text_cell(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::test_support::*;

    #[test]
    fn csv_parses_back_with_the_right_counts() {
        let odd = "검색, \"엔진\"\nnext";
        let seconds = vec![
            second(
                0,
                3,
                vec![series("login", 10, 200, 2000), series(odd, 5, 500, 4000)],
            ),
            second(1, 4, vec![series(odd, 7, 200, 1000)]),
            second(2, 0, vec![]),
        ];
        let r = run(meta("csv", 3.0), seconds);
        let text = timeline_csv(&r);
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let head: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(head, TIMELINE_COLUMNS);
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        // 3 seconds x (all + 2 steps).
        assert_eq!(rows.len(), 9);
        let get = |t: &str, step: &str| {
            rows.iter()
                .find(|r| &r[0] == t && &r[1] == step)
                .unwrap_or_else(|| panic!("no row {t} {step}"))
                .clone()
        };
        let a0 = get("0", "all");
        assert_eq!(&a0[2], "3");
        assert_eq!(&a0[3], "5");
        assert_eq!(&a0[4], "15");
        assert_eq!(&a0[5], "5");
        assert_eq!(&a0[6], "15");
        assert_eq!(&a0[13], "15000");
        assert_eq!(&a0[14], "1500");
        let o0 = get("0", odd);
        assert_eq!(&o0[4], "5");
        assert_eq!(&o0[5], "5");
        let p50: f64 = o0[7].parse().unwrap();
        assert!((p50 - 4.0).abs() < 0.01);
        let p99: f64 = get("0", "login")[10].parse().unwrap();
        assert!((p99 - 2.0).abs() < 0.01);
        let l1 = get("1", "login");
        assert_eq!(&l1[4], "0");
        assert_eq!(&l1[7], "");
        assert_eq!(&get("1", odd)[4], "7");
        assert_eq!(&get("2", "all")[4], "0");
        // Sum of step rows equals the all rows.
        let total: u64 = rows
            .iter()
            .filter(|r| &r[1] != "all")
            .map(|r| r[4].parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 22);
        // The odd name is quoted as RFC 4180 says.
        assert!(text.contains("\"검색, \"\"엔진\"\"\nnext\""));
    }

    #[test]
    fn step_names_a_spreadsheet_would_run_as_formulas_are_quoted_and_numbers_are_not() {
        let hostile = [
            "=HYPERLINK(\"http://x\",\"y\")",
            "+1+1",
            "-2+3",
            "@SUM(A1)",
            "\t=1",
            "\r=1",
        ];
        let plain = ["검색", "a=b", "GET /x-y", "1-2"];
        let mut all: Vec<_> = hostile.iter().chain(&plain).copied().collect();
        all.sort();
        let seconds = vec![second(
            0,
            1,
            all.iter().map(|n| series(n, 2, 200, 1500)).collect(),
        )];
        let text = timeline_csv(&run(meta("csv", 1.0), seconds));
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        let steps: Vec<&str> = rows.iter().map(|r| &r[1]).collect();
        for h in hostile {
            assert!(
                steps.contains(&format!("'{h}").as_str()),
                "{h:?}: {steps:?}"
            );
            assert!(!steps.contains(&h), "{h:?} written raw");
        }
        for p in plain {
            assert!(steps.contains(&p), "{p:?}: {steps:?}");
        }
        // The number columns are untouched: no `'`, and they parse as numbers.
        for r in &rows {
            for (i, cell) in r.iter().enumerate().filter(|(i, _)| *i != 1) {
                assert!(
                    cell.is_empty() || cell.parse::<f64>().is_ok(),
                    "column {i}: {cell}"
                );
            }
        }
    }

    #[test]
    fn empty_run_has_only_the_header() {
        let r = run(meta("empty", 0.0), vec![]);
        assert_eq!(
            timeline_csv(&r),
            format!("{}\n", TIMELINE_COLUMNS.join(","))
        );
    }
}

//! One raw record as a line: JSON (one object per line) or CSV (with a header).
//! The same fields in both, named as the docs list them (`pado docs outputs`).

use std::borrow::Cow;
use std::io::Write;

use pado_metrics::raw::{RawBatch, RawRecord};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::spec::RawFormat;

/// The CSV header: every field of a line, in order. The last four are an LLM
/// stream's (`sse: {llm: true}` steps), empty on other requests' lines.
pub const CSV_HEADER: [&str; 26] = [
    "time",
    "scenario",
    "step",
    "method",
    "url",
    "status",
    "error",
    "failed",
    "http",
    "bytes_sent",
    "bytes_received",
    "blocked_ms",
    "dns_ms",
    "connecting_ms",
    "tls_ms",
    "sending_ms",
    "waiting_ms",
    "receiving_ms",
    "duration_ms",
    "vu",
    "iter",
    "tags",
    "llm_ttft_ms",
    "llm_tpot_ms",
    "llm_output_tokens",
    "llm_input_tokens",
];

/// Masks secrets in a request's URL before it is written (the plan's
/// `{{ env.X }}` values, as debug output and failure samples mask them).
pub type Mask = Box<dyn Fn(&[u8]) -> String + Send>;

/// What turns records into lines: the step names (by series index) and the mask.
pub struct LineFormat {
    /// JSON or CSV.
    pub format: RawFormat,
    /// Step names by series index.
    pub steps: Vec<String>,
    /// See [`Mask`].
    pub mask: Mask,
}

/// The error category a raw line shows: the transport failure's name, `status` for
/// an unexpected status, `check` for a failed check; none for a success.
pub fn error_of(r: &RawRecord) -> Option<&'static str> {
    match r.error {
        Some(e) => Some(e.as_str()),
        None if r.failed_by_check => Some("check"),
        None if r.failed => Some("status"),
        None => None,
    }
}

/// µs as milliseconds with microsecond precision (`1234` → `1.234`).
fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// A record's tags: (name, value) pairs from the batch's text.
fn tags<'a>(b: &'a RawBatch, r: &RawRecord) -> impl Iterator<Item = (Cow<'a, str>, Cow<'a, str>)> {
    b.get(r.tags)
        .split(|&c| c == 0x1f)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (n, v) = match p.iter().position(|&c| c == 0x1e) {
                Some(i) => (&p[..i], &p[i + 1..]),
                None => (p, &[][..]),
            };
            (String::from_utf8_lossy(n), String::from_utf8_lossy(v))
        })
}

struct Tags<'a>(&'a RawBatch, &'a RawRecord);

impl Serialize for Tags<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in tags(self.0, self.1) {
            m.serialize_entry(&k, &v)?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct JsonLine<'a> {
    time: String,
    scenario: Cow<'a, str>,
    step: &'a str,
    method: Cow<'a, str>,
    url: String,
    status: u16,
    error: Option<&'static str>,
    failed: bool,
    http: &'static str,
    bytes_sent: u64,
    bytes_received: u64,
    blocked_ms: f64,
    dns_ms: f64,
    connecting_ms: f64,
    tls_ms: f64,
    sending_ms: f64,
    waiting_ms: f64,
    receiving_ms: f64,
    duration_ms: f64,
    vu: u64,
    iter: u64,
    tags: Tags<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    llm_ttft_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    llm_tpot_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    llm_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    llm_input_tokens: Option<u64>,
}

/// An LLM line's figures, in the units of its fields (ms, tokens); all `None`
/// for a request that was not an LLM stream, and each `None` that it lacks.
fn llm_fields(r: &RawRecord) -> (Option<f64>, Option<f64>, Option<u64>, Option<u64>) {
    match &r.llm {
        Some(l) => (
            l.ttft_us.map(ms),
            l.tpot_us.map(ms),
            Some(l.output_tokens),
            l.input_tokens,
        ),
        None => (None, None, None, None),
    }
}

/// A figure as a CSV cell: empty when absent.
fn cell<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// A spreadsheet reads a text cell starting with `=`, `+`, `-`, `@`, tab or CR as a
/// formula (CSV injection); such a cell gets a leading `'`, as pado's other CSV files do.
fn text_cell(s: &str) -> Cow<'_, str> {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        Cow::Owned(format!("'{s}"))
    } else {
        Cow::Borrowed(s)
    }
}

impl LineFormat {
    fn step<'a>(&'a self, r: &RawRecord) -> &'a str {
        self.steps.get(r.step as usize).map_or("", String::as_str)
    }

    /// Write the CSV header (nothing for JSON).
    pub fn header(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.format == RawFormat::Csv {
            let mut w = csv::Writer::from_writer(out);
            w.write_record(CSV_HEADER).map_err(csv_io)?;
            w.flush()?;
        }
        Ok(())
    }

    /// Write every record of `b` as a line.
    pub fn write_batch(&self, b: &RawBatch, out: &mut dyn Write) -> std::io::Result<()> {
        match self.format {
            RawFormat::Json => {
                for r in &b.records {
                    let (llm_ttft_ms, llm_tpot_ms, llm_output_tokens, llm_input_tokens) =
                        llm_fields(r);
                    let line = JsonLine {
                        time: pado_base::stamp::utc_us(r.at_us),
                        scenario: String::from_utf8_lossy(b.get(r.scenario)),
                        step: self.step(r),
                        method: String::from_utf8_lossy(b.get(r.method)),
                        url: (self.mask)(b.get(r.url)),
                        status: r.status,
                        error: error_of(r),
                        failed: r.failed,
                        http: r.protocol.as_str(),
                        bytes_sent: r.bytes_sent,
                        bytes_received: r.bytes_received,
                        blocked_ms: ms(r.phases.blocked_us),
                        dns_ms: ms(r.phases.dns_us),
                        connecting_ms: ms(r.phases.connecting_us),
                        tls_ms: ms(r.phases.tls_us),
                        sending_ms: ms(r.phases.sending_us),
                        waiting_ms: ms(r.phases.waiting_us),
                        receiving_ms: ms(r.phases.receiving_us),
                        duration_ms: ms(r.phases.duration_us),
                        vu: r.vu,
                        iter: r.iter,
                        tags: Tags(b, r),
                        llm_ttft_ms,
                        llm_tpot_ms,
                        llm_output_tokens,
                        llm_input_tokens,
                    };
                    serde_json::to_writer(&mut *out, &line)?;
                    out.write_all(b"\n")?;
                }
            }
            RawFormat::Csv => {
                let mut w = csv::Writer::from_writer(&mut *out);
                for r in &b.records {
                    let scenario = String::from_utf8_lossy(b.get(r.scenario));
                    let method = String::from_utf8_lossy(b.get(r.method));
                    let url = (self.mask)(b.get(r.url));
                    let tags = tags(b, r)
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join("&");
                    let p = &r.phases;
                    let nums = [
                        p.blocked_us,
                        p.dns_us,
                        p.connecting_us,
                        p.tls_us,
                        p.sending_us,
                        p.waiting_us,
                        p.receiving_us,
                        p.duration_us,
                    ]
                    .map(|v| ms(v).to_string());
                    let (ttft, tpot, output, input) = llm_fields(r);
                    let fields: [Cow<'_, str>; 26] = [
                        pado_base::stamp::utc_us(r.at_us).into(),
                        text_cell(&scenario),
                        text_cell(self.step(r)),
                        text_cell(&method),
                        text_cell(&url),
                        r.status.to_string().into(),
                        error_of(r).unwrap_or("").into(),
                        if r.failed { "true" } else { "false" }.into(),
                        r.protocol.as_str().into(),
                        r.bytes_sent.to_string().into(),
                        r.bytes_received.to_string().into(),
                        nums[0].as_str().into(),
                        nums[1].as_str().into(),
                        nums[2].as_str().into(),
                        nums[3].as_str().into(),
                        nums[4].as_str().into(),
                        nums[5].as_str().into(),
                        nums[6].as_str().into(),
                        nums[7].as_str().into(),
                        r.vu.to_string().into(),
                        r.iter.to_string().into(),
                        text_cell(&tags),
                        cell(ttft).into(),
                        cell(tpot).into(),
                        cell(output).into(),
                        cell(input).into(),
                    ];
                    w.write_record(fields.iter().map(|f| f.as_bytes()))
                        .map_err(csv_io)?;
                }
                w.flush()?;
            }
        }
        Ok(())
    }
}

fn csv_io(e: csv::Error) -> std::io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => std::io::Error::other(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_metrics::raw::RawProtocol;
    use pado_metrics::{ErrorKind, Phases};

    fn batch() -> RawBatch {
        let mut b = RawBatch::default();
        let ok = RawRecord {
            at_us: 1_700_000_000_123_456,
            step: 1,
            vu: 3,
            iter: 7,
            status: 200,
            protocol: RawProtocol::Http2,
            bytes_sent: 80,
            bytes_received: 1234,
            phases: Phases {
                waiting_us: 12_345,
                duration_us: 12_399,
                ..Phases::default()
            },
            scenario: b.push_text(&[b"checkout"]),
            method: b.push_text(&[b"GET"]),
            url: b.push_text(&[b"http://127.0.0.1:8080", b"/search?q=s3cret&page=1"]),
            tags: b.push_text(&[b"region\x1eseoul, busan\x1f", b"team\x1e=cmd\x1f"]),
            ..RawRecord::default()
        };
        b.records.push(ok);
        let refused = RawRecord {
            at_us: 1_700_000_001_000_000,
            step: 0,
            error: Some(ErrorKind::ConnectRefused),
            failed: true,
            scenario: b.push_text(&[b"checkout"]),
            method: b.push_text(&[b"POST"]),
            url: b.push_text(&[b"http://127.0.0.1:1/login"]),
            ..RawRecord::default()
        };
        b.records.push(refused);
        b
    }

    fn format(f: RawFormat) -> LineFormat {
        LineFormat {
            format: f,
            steps: vec!["로그인".into(), "검색, 상품".into()],
            mask: Box::new(|u: &[u8]| String::from_utf8_lossy(u).replace("s3cret", "***")),
        }
    }

    #[test]
    fn json_lines_carry_every_field_with_microsecond_times() {
        let mut out = Vec::new();
        format(RawFormat::Json)
            .write_batch(&batch(), &mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        let l = &lines[0];
        assert_eq!(l["time"], "2023-11-14T22:13:20.123456Z");
        assert_eq!(l["step"], "검색, 상품");
        assert_eq!(l["scenario"], "checkout");
        assert_eq!(l["url"], "http://127.0.0.1:8080/search?q=***&page=1");
        assert_eq!(l["status"], 200);
        assert_eq!(l["error"], serde_json::Value::Null);
        assert_eq!(l["http"], "2");
        assert_eq!(l["waiting_ms"], 12.345);
        assert_eq!(l["duration_ms"], 12.399);
        assert_eq!(l["bytes_received"], 1234);
        assert_eq!((l["vu"].as_u64(), l["iter"].as_u64()), (Some(3), Some(7)));
        assert_eq!(l["tags"]["region"], "seoul, busan");
        assert_eq!(l["tags"]["team"], "=cmd");
        let f = &lines[1];
        assert_eq!(f["error"], "connect_refused");
        assert_eq!(f["status"], 0);
        assert_eq!(f["failed"], true);
        assert_eq!(f["step"], "로그인");
        assert_eq!(f["tags"], serde_json::json!({}));
    }

    #[test]
    fn csv_quotes_commas_keeps_hangul_and_defuses_formulas() {
        let fmt = format(RawFormat::Csv);
        let mut out = Vec::new();
        fmt.header(&mut out).unwrap();
        fmt.write_batch(&batch(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // Read back by the csv crate as any CSV reader would.
        let mut r = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>(), CSV_HEADER);
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][2], "검색, 상품");
        assert_eq!(&rows[0][21], "region=seoul, busan&team==cmd");
        assert_eq!(&rows[0][4], "http://127.0.0.1:8080/search?q=***&page=1");
        assert_eq!(&rows[0][16], "12.345");
        assert_eq!(&rows[0][18], "12.399");
        assert_eq!(&rows[1][6], "connect_refused");
        // The comma-holding cells are quoted on the line itself.
        let first = text.lines().nth(1).unwrap();
        assert!(first.contains("\"검색, 상품\""), "{first}");
        assert!(
            first.contains("\"region=seoul, busan&team==cmd\""),
            "{first}"
        );
        assert!(!text.contains("s3cret"));
    }

    #[test]
    fn a_cell_a_spreadsheet_would_run_is_defused() {
        let mut b = RawBatch::default();
        let r = RawRecord {
            scenario: b.push_text(&[b"=HYPERLINK(\"http://x\")"]),
            ..RawRecord::default()
        };
        b.records.push(r);
        let mut out = Vec::new();
        format(RawFormat::Csv).write_batch(&b, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes());
        let row = rd.records().next().unwrap().unwrap();
        assert_eq!(&row[1], "'=HYPERLINK(\"http://x\")");
    }

    /// An LLM stream's line carries its figures; any other line has none (absent
    /// in JSON, empty cells in CSV).
    #[test]
    fn llm_streams_lines_carry_their_figures_and_others_none() {
        use pado_metrics::raw::RawLlm;
        let mut b = batch();
        let llm = RawRecord {
            status: 200,
            llm: Some(RawLlm {
                ttft_us: Some(150_250),
                tpot_us: Some(20_000),
                output_tokens: 32,
                input_tokens: Some(1_000),
            }),
            scenario: b.push_text(&[b"chat"]),
            ..RawRecord::default()
        };
        let no_token = RawRecord {
            llm: Some(RawLlm {
                ttft_us: None,
                tpot_us: None,
                output_tokens: 0,
                input_tokens: None,
            }),
            ..RawRecord::default()
        };
        b.records.push(llm);
        b.records.push(no_token);
        let mut out = Vec::new();
        format(RawFormat::Json).write_batch(&b, &mut out).unwrap();
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for plain in &lines[..2] {
            for f in [
                "llm_ttft_ms",
                "llm_tpot_ms",
                "llm_output_tokens",
                "llm_input_tokens",
            ] {
                assert!(plain.get(f).is_none(), "{f} in {plain}");
            }
        }
        let l = &lines[2];
        assert_eq!(l["llm_ttft_ms"], 150.25);
        assert_eq!(l["llm_tpot_ms"], 20.0);
        assert_eq!(l["llm_output_tokens"], 32);
        assert_eq!(l["llm_input_tokens"], 1000);
        // No token: a count of 0, no times, no input tokens.
        let u = &lines[3];
        assert_eq!(u["llm_output_tokens"], 0);
        assert!(u.get("llm_ttft_ms").is_none() && u.get("llm_input_tokens").is_none());
        let fmt = format(RawFormat::Csv);
        let mut out = Vec::new();
        fmt.header(&mut out).unwrap();
        fmt.write_batch(&b, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(
            &rows[0].iter().skip(22).collect::<Vec<_>>(),
            &["", "", "", ""]
        );
        assert_eq!(
            &rows[2].iter().skip(22).collect::<Vec<_>>(),
            &["150.25", "20", "32", "1000"]
        );
        assert_eq!(
            &rows[3].iter().skip(22).collect::<Vec<_>>(),
            &["", "", "0", ""]
        );
    }
}

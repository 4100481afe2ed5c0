//! `--export hdr`: the run's latencies as HdrHistogram's own interval log
//! (`latency.hlog`), which HdrHistogram's tools read as they read jHiccup's logs:
//! `HistogramLogProcessor`, `HistogramLogAnalyzer`, hdr-plot, and the reference
//! decoders of Java, Python, C and Rust.
//!
//! The timeline's histograms are HdrHistogram V2 in its *plain* form, which the
//! reference decoders do not read (they read only the deflate-compressed one); this
//! log holds the compressed form, written by the `hdrhistogram` crate. One line per
//! second of the run for every request (`http_req_duration`), and one per step with
//! requests in that second, tagged `Tag=STEP` (a step name's spaces become `_` and
//! its commas `;`, which a tag cannot hold). Values are in microseconds, as in the
//! timeline, so every count is the timeline's, exact; `Interval_Max` is in
//! milliseconds (the log's `MaxValueDivisor`), as in jHiccup's logs.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use pado_metrics::series::Phase;
use pado_metrics::LatencyHistogram;
use pado_results::result_dir::ResultError;
use pado_results::{ResultDir, RunMeta};

/// The file `--export hdr` writes into the result directory.
pub const HDR_LOG_FILE: &str = "latency.hlog";

/// Why the interval log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HdrExportError {
    /// The result directory could not be read.
    #[error(transparent)]
    Result(#[from] ResultError),
    /// `run.json`'s start is not an RFC 3339 time, so the log has no start.
    #[error(
        "run.json started_at `{0}` is not an RFC 3339 time: the latency log needs the run's start"
    )]
    BadStart(String),
    /// A histogram could not be compressed (a count too large for the format).
    #[error("second {t}: its histogram does not encode: {message}")]
    Encode {
        /// Second of the run.
        t: u32,
        /// What went wrong.
        message: String,
    },
}

/// The tag a step's lines carry: its name with what a tag cannot hold (spaces,
/// commas, line breaks) replaced, so `GET /posts/{id}` is `GET_/posts/{id}`.
pub fn step_tag(step: &str) -> String {
    step.chars()
        .map(|c| match c {
            ',' => ';',
            c if c.is_whitespace() => '_',
            c => c,
        })
        .collect()
}

/// The run's latencies as an HdrHistogram interval log (see the module's doc),
/// read from the result directory's timeline a second at a time.
pub fn interval_log(dir: &ResultDir, meta: &RunMeta) -> Result<String, HdrExportError> {
    let start = time::OffsetDateTime::parse(
        &meta.started_at,
        &time::format_description::well_known::Rfc3339,
    )
    .map_err(|_| HdrExportError::BadStart(meta.started_at.clone()))?;
    let since_epoch = Duration::from_nanos(start.unix_timestamp_nanos().max(0) as u64);
    let start_s = since_epoch.as_secs_f64();
    let mut out: Vec<u8> = Vec::new();
    // The header as HdrHistogram's own `HistogramLogWriter` writes it; interval
    // timestamps are seconds from `BaseTime`, the run's second 0.
    out.extend_from_slice(
        format!(
            "#[pado {}: http_req_duration per second, values in microseconds, Interval_Max in milliseconds; Tag=STEP lines are one step's requests]\n\
             #[Histogram log format version 1.3]\n\
             #[StartTime: {start_s:.3} (seconds since epoch), {started}]\n\
             #[BaseTime: {start_s:.3} (seconds since epoch)]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
            env!("CARGO_PKG_VERSION"),
            started = meta.started_at,
        )
        .as_bytes(),
    );
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1000.0)
        .begin_log_with(&mut out, &mut serializer)
        .map_err(|e| ResultError::Io {
            path: dir.path().join(HDR_LOG_FILE),
            source: e,
        })?;
    let mut reader = dir.timeline_reader()?;
    let duration = Phase::ALL
        .iter()
        .position(|p| *p == Phase::Duration)
        .unwrap_or(0);
    // Each step's tag, made unique once (two names may differ only in a space).
    let mut tags: BTreeMap<String, String> = BTreeMap::new();
    while let Some(sec) = reader.next_second()? {
        let mut all = LatencyHistogram::new();
        let mut steps: BTreeMap<&str, LatencyHistogram> = BTreeMap::new();
        for s in &sec.series {
            let h = &s.hist[duration];
            all.add(h);
            if !h.is_empty() {
                steps.entry(s.key.name.as_str()).or_default().add(h);
            }
        }
        let at = Duration::from_secs(u64::from(sec.t));
        let one = Duration::from_secs(1);
        let encode_err = |e: &dyn std::fmt::Display| HdrExportError::Encode {
            t: sec.t,
            message: e.to_string(),
        };
        log.write_histogram(&all.to_hdrhistogram(), at, one, None)
            .map_err(|e| encode_err(&e))?;
        for (name, h) in steps {
            let tag = tag_for(&mut tags, name);
            let tag = Tag::new(tag).ok_or_else(|| encode_err(&"a step's tag holds a space"))?;
            log.write_histogram(&h.to_hdrhistogram(), at, one, Some(tag))
                .map_err(|e| encode_err(&e))?;
        }
    }
    drop(log);
    String::from_utf8(out).map_err(|e| HdrExportError::Encode {
        t: 0,
        message: e.to_string(),
    })
}

/// The tag of step `name`: [`step_tag`], with `~2`, `~3`… when another step's name
/// gave the same tag, so two steps never share lines.
fn tag_for<'a>(tags: &'a mut BTreeMap<String, String>, name: &str) -> &'a str {
    if !tags.contains_key(name) {
        let base = step_tag(name);
        let mut tag = base.clone();
        let mut k = 2;
        while tags.values().any(|v| *v == tag) {
            tag = format!("{base}~{k}");
            k += 1;
        }
        tags.insert(name.to_string(), tag);
    }
    &tags[name]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::test_support::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::Histogram;

    /// One line of the log as HdrHistogram's own reader gives it.
    struct Line {
        at: f64,
        tag: Option<String>,
        max: f64,
        h: Histogram<u64>,
    }

    fn lines(log: &str) -> Vec<Line> {
        IntervalLogIterator::new(log.as_bytes())
            .filter_map(|e| match e.unwrap() {
                LogEntry::Interval(l) => {
                    let bytes = base64::Engine::decode(
                        &base64::engine::general_purpose::STANDARD,
                        l.encoded_histogram(),
                    )
                    .unwrap();
                    // The compressed form, which the reference decoders read.
                    assert_eq!(&bytes[..4], &0x1c84_9314u32.to_be_bytes());
                    Some(Line {
                        at: l.start_timestamp().as_secs_f64(),
                        tag: l.tag().map(|t| t.as_str().to_string()),
                        max: l.max(),
                        h: Deserializer::new().deserialize(&mut &bytes[..]).unwrap(),
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// Three seconds of planted latencies (the third empty), two steps, one of them
    /// named with spaces, commas and Hangul: each second's line holds exactly its
    /// requests, each step's tagged line exactly that step's, in microseconds, with
    /// the run's start as the log's start and base time.
    #[test]
    fn the_log_holds_each_seconds_requests_as_hdrhistogram_reads_them() {
        let t = tempfile::tempdir().unwrap();
        let dir = ResultDir::create(t.path().join("run")).unwrap();
        let m = meta("hlog", 3.0);
        dir.write_meta(&m).unwrap();
        let mut w = dir.timeline_writer().unwrap();
        let slow = "GET /글, 목록";
        w.write(&second(
            0,
            2,
            vec![
                series("login", 3, 200, 1_500),
                series(slow, 2, 503, 250_000),
            ],
        ))
        .unwrap();
        w.write(&second(1, 2, vec![series("login", 5, 200, 40)]))
            .unwrap();
        w.write(&second(2, 2, vec![])).unwrap();
        drop(w);

        let log = interval_log(&dir, &m).unwrap();
        // 2025-01-02T03:04:05Z
        assert!(
            log.contains("#[StartTime: 1735787045.000 (seconds since epoch)"),
            "{log}"
        );
        assert!(
            log.contains("#[BaseTime: 1735787045.000 (seconds since epoch)]"),
            "{log}"
        );
        assert!(log.contains(
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        ));
        let got = lines(&log);
        let summary: Vec<(f64, Option<&str>, u64)> = got
            .iter()
            .map(|l| (l.at, l.tag.as_deref(), l.h.len()))
            .collect();
        assert_eq!(
            summary,
            [
                (0.0, None, 5),
                (0.0, Some("GET_/글;_목록"), 2),
                (0.0, Some("login"), 3),
                (1.0, None, 5),
                (1.0, Some("login"), 5),
                (2.0, None, 0),
            ]
        );
        let all0 = &got[0].h;
        assert_eq!(all0.value_at_quantile(0.6), all0.highest_equivalent(1_500));
        assert_eq!(all0.max(), all0.highest_equivalent(250_000));
        // Interval_Max in milliseconds.
        assert!((got[0].max - all0.max() as f64 / 1000.0).abs() < 0.001);
        assert_eq!(got[4].h.max(), 40);
        assert_eq!(got[4].h.min(), 40);
    }

    #[test]
    fn step_tags_hold_no_separator_and_stay_apart() {
        let mut tags = BTreeMap::new();
        assert_eq!(tag_for(&mut tags, "GET /a b"), "GET_/a_b");
        assert_eq!(tag_for(&mut tags, "GET /a\tb"), "GET_/a_b~2");
        assert_eq!(tag_for(&mut tags, "GET /a b"), "GET_/a_b");
        assert!(Tag::new(&step_tag("x,y\nz\r w")).is_some());
    }

    #[test]
    fn a_start_that_is_no_time_is_named() {
        let t = tempfile::tempdir().unwrap();
        let dir = ResultDir::create(t.path().join("run")).unwrap();
        let mut m = meta("hlog", 1.0);
        m.started_at = "yesterday".into();
        let e = interval_log(&dir, &m).unwrap_err().to_string();
        assert!(e.contains("`yesterday`"), "{e}");
    }
}

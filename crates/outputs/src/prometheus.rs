//! Prometheus remote write 1.0: a `WriteRequest` protobuf (messages derived with
//! prost from `prompb/remote.proto` and `types.proto`, no protoc), snappy block
//! compression. Counters are cumulative; `http_req_duration` and the LLM
//! streams' `llm_ttft`, `llm_itl`, `llm_tpot` are classic histograms (`_bucket`
//! with fixed `le` bounds, `_sum`, `_count`); native histograms are not written.
//! A k6 script's own metrics are written as [`crate::custom`] says.

use pado_metrics::CustomKind;

use crate::catalog::DURATION_BUCKETS_S;
use crate::custom::{sanitised_name, CustomPoint};
use crate::state::{Labels, Snapshot};

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series, each with its samples.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Labels sorted by name, `__name__` among them.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Samples in time order.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Label name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Label value (UTF-8).
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// One series: its sorted labels, and a sample.
fn series(
    name: &str,
    common: &Labels,
    labels: &Labels,
    extra: Option<(&str, String)>,
) -> Vec<Label> {
    let mut l: Vec<Label> = std::iter::once(Label {
        name: "__name__".into(),
        value: name.into(),
    })
    .chain(common.iter().chain(labels.iter()).map(|(k, v)| Label {
        name: k.clone(),
        value: v.clone(),
    }))
    .chain(extra.map(|(k, v)| Label {
        name: k.into(),
        value: v,
    }))
    .filter(|l| !l.value.is_empty())
    .collect();
    l.sort_by(|a, b| a.name.cmp(&b.name));
    l
}

/// The seconds of `batch` as one `WriteRequest`: each series once, with one sample
/// per second.
pub fn write_request(batch: &[&Snapshot]) -> WriteRequest {
    let mut by_series: std::collections::BTreeMap<Vec<(String, String)>, Vec<Sample>> =
        Default::default();
    let mut add = |labels: Vec<Label>, value: f64, ts: i64| {
        let key = labels.into_iter().map(|l| (l.name, l.value)).collect();
        by_series.entry(key).or_default().push(Sample {
            value,
            timestamp: ts,
        });
    };
    for s in batch {
        for p in &s.points {
            add(
                series(p.metric.name, &s.common, &p.labels, None),
                p.value,
                s.at_ms,
            );
        }
        for hp in &s.histograms {
            let h = hp.metric.name;
            let bucket = format!("{h}_bucket");
            for (b, c) in DURATION_BUCKETS_S.iter().zip(&hp.le_counts) {
                add(
                    series(&bucket, &s.common, &hp.labels, Some(("le", format_le(*b)))),
                    *c as f64,
                    s.at_ms,
                );
            }
            add(
                series(&bucket, &s.common, &hp.labels, Some(("le", "+Inf".into()))),
                hp.count as f64,
                s.at_ms,
            );
            add(
                series(&format!("{h}_sum"), &s.common, &hp.labels, None),
                hp.sum_s,
                s.at_ms,
            );
            add(
                series(&format!("{h}_count"), &s.common, &hp.labels, None),
                hp.count as f64,
                s.at_ms,
            );
        }
        for c in &s.custom {
            custom_series(c, &s.common, s.at_ms, &mut add);
        }
    }
    WriteRequest {
        timeseries: by_series
            .into_iter()
            .map(|(labels, samples)| TimeSeries {
                labels: labels
                    .into_iter()
                    .map(|(name, value)| Label { name, value })
                    .collect(),
                samples,
            })
            .collect(),
    }
}

/// A k6 script's metric as Prometheus series ([`crate::custom`]: counters,
/// gauges, a rate's passes and samples as two counters, a trend as a classic
/// histogram).
fn custom_series(
    c: &CustomPoint,
    common: &Labels,
    ts: i64,
    add: &mut impl FnMut(Vec<Label>, f64, i64),
) {
    let base = sanitised_name(&c.name);
    let l = &c.labels;
    match c.kind {
        CustomKind::Counter => add(series(&format!("{base}_total"), common, l, None), c.sum, ts),
        CustomKind::Gauge => add(series(&base, common, l, None), c.last, ts),
        CustomKind::Rate => {
            let passes = format!("{base}_passes_total");
            add(series(&passes, common, l, None), c.nonzero as f64, ts);
            let samples = format!("{base}_samples_total");
            add(series(&samples, common, l, None), c.count as f64, ts);
        }
        CustomKind::Trend => {
            let h = c.histogram_name();
            let bucket = format!("{h}_bucket");
            for (b, n) in c.bounds().iter().zip(&c.le_counts) {
                let le = Some(("le", format_le(*b)));
                add(series(&bucket, common, l, le), *n as f64, ts);
            }
            let inf = Some(("le", "+Inf".to_string()));
            add(series(&bucket, common, l, inf), c.count as f64, ts);
            add(
                series(&format!("{h}_sum"), common, l, None),
                c.out_sum(),
                ts,
            );
            add(
                series(&format!("{h}_count"), common, l, None),
                c.count as f64,
                ts,
            );
        }
    }
}

/// A bucket bound as Prometheus client libraries write it (`0.005`, `1`, `2.5`).
fn format_le(b: f64) -> String {
    let s = format!("{b}");
    s
}

/// The HTTP body: the protobuf, snappy-compressed (block format).
pub fn body(batch: &[&Snapshot]) -> Vec<u8> {
    let raw = prost::Message::encode_to_vec(&write_request(batch));
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

/// Decode a body (tests and the testkit's receiver).
pub fn decode(body: &[u8]) -> Result<WriteRequest, String> {
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| format!("snappy: {e}"))?;
    <WriteRequest as prost::Message>::decode(raw.as_slice()).map_err(|e| format!("protobuf: {e}"))
}

/// The headers remote write 1.0 asks for.
pub const HEADERS: [(&str, &str); 3] = [
    ("Content-Type", "application/x-protobuf"),
    ("Content-Encoding", "snappy"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{labels, second};
    use crate::state::State;

    #[test]
    fn round_trips_with_sorted_utf8_labels_and_counts() {
        let mut st = State::new(labels());
        let a = st.fold(&second(0, "검색", 5, 1, 3), 10_000);
        let b = st.fold(&second(1, "검색", 7, 0, 30), 11_000);
        let wr = decode(&body(&[&a, &b])).unwrap();
        let reqs: Vec<&TimeSeries> = wr
            .timeseries
            .iter()
            .filter(|t| {
                t.labels
                    .iter()
                    .any(|l| l.name == "__name__" && l.value == "pado_http_reqs_total")
            })
            .collect();
        assert_eq!(reqs.len(), 2, "200 and 503");
        for t in &wr.timeseries {
            assert!(t.labels.windows(2).all(|w| w[0].name < w[1].name));
        }
        let last: f64 = reqs.iter().map(|t| t.samples.last().unwrap().value).sum();
        assert_eq!(last, 13.0);
        assert_eq!(reqs[0].samples.len(), 2);
        assert_eq!(reqs[0].samples[1].timestamp, 11_000);
        assert!(reqs[0]
            .labels
            .iter()
            .any(|l| l.name == "step" && l.value == "검색"));
        let inf = wr
            .timeseries
            .iter()
            .find(|t| t.labels.iter().any(|l| l.name == "le" && l.value == "+Inf"))
            .unwrap();
        assert_eq!(inf.samples[1].value, 13.0);
        assert!(wr.timeseries.iter().any(|t| t
            .labels
            .iter()
            .any(|l| l.name == "le" && l.value == "0.005")));
    }
}

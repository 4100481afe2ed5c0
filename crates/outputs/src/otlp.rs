//! OpenTelemetry OTLP/HTTP, protobuf body to `/v1/metrics`: counters as cumulative
//! monotonic sums, VUs as gauges, `http_req_duration` as a cumulative explicit-bucket
//! histogram; `service.name=pado`, the run and the generator as resource attributes.
//! A k6 script's own metrics are written as [`crate::custom`] says.
//!
//! The messages are the subset of `opentelemetry/proto/metrics/v1/metrics.proto`
//! pado writes, derived with prost: the `opentelemetry-proto` crate's generated
//! messages come only with tonic, a whole gRPC stack for one POST.

use std::collections::BTreeMap;

use pado_metrics::CustomKind;

use crate::catalog::{self, MetricKind, DURATION_BUCKETS_S};
use crate::custom::{sanitised_name, CustomPoint};
use crate::state::{Labels, Snapshot};

/// `ExportMetricsServiceRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    /// Metrics by resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// `ResourceMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    /// The resource (pado's run).
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// Metrics by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// `Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// Its attributes.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    /// The scope (`pado`).
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The metrics.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// `InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `Metric`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Description.
    #[prost(string, tag = "2")]
    pub description: String,
    /// Unit (UCUM).
    #[prost(string, tag = "3")]
    pub unit: String,
    /// The points.
    #[prost(oneof = "Data", tags = "5, 7, 9")]
    pub data: Option<Data>,
}

/// `Metric.data`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    /// A gauge.
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    /// A sum.
    #[prost(message, tag = "7")]
    Sum(Sum),
    /// A histogram.
    #[prost(message, tag = "9")]
    Histogram(Histogram),
}

/// `Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    /// Points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// `Sum`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    /// Points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// 2 = cumulative.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    /// Counters only grow.
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// `Histogram`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// Points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    /// 2 = cumulative.
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

/// `NumberDataPoint` (integer values: `as_int`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    /// Attributes.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// Start of the cumulative span (the run's start), ns since the epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// The point's time, ns since the epoch.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// The value.
    #[prost(sfixed64, tag = "6")]
    pub as_int: i64,
    /// The value when it is not a whole number (a k6 script's metrics; `as_int`
    /// is then 0, which protobuf does not write).
    #[prost(double, optional, tag = "4")]
    pub as_double: Option<f64>,
}

/// `HistogramDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramDataPoint {
    /// Attributes.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Start of the cumulative span, ns.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// The point's time, ns.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// Values recorded.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Values per bucket (not cumulative), one more than `explicit_bounds`.
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    /// Upper bounds.
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
}

/// `KeyValue` (string values only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// Key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue` (the string case).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// A string.
    #[prost(string, tag = "1")]
    pub string_value: String,
}

fn kv(k: &str, v: &str) -> KeyValue {
    KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            string_value: v.into(),
        }),
    }
}

fn attrs(l: &Labels) -> Vec<KeyValue> {
    l.iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| kv(k, v))
        .collect()
}

const CUMULATIVE: i32 = 2;

/// The request for `batch`'s seconds: one resource (the run), one point per series
/// and second.
pub fn request(batch: &[&Snapshot]) -> ExportMetricsServiceRequest {
    let Some(first) = batch.first() else {
        return ExportMetricsServiceRequest::default();
    };
    let ns = |ms: i64| (ms.max(0) as u64).saturating_mul(1_000_000);
    let mut metrics: Vec<Metric> = Vec::new();
    for m in catalog::ALL {
        let data = match m.kind {
            MetricKind::Histogram => Data::Histogram(Histogram {
                data_points: batch
                    .iter()
                    .flat_map(|s| {
                        s.histograms
                            .iter()
                            .filter(|h| h.metric.name == m.name)
                            .map(|h| HistogramDataPoint {
                                attributes: attrs(&h.labels),
                                start_time_unix_nano: ns(s.start_ms),
                                time_unix_nano: ns(s.at_ms),
                                count: h.count,
                                sum: Some(h.sum_s),
                                bucket_counts: h.bucket_counts(),
                                explicit_bounds: DURATION_BUCKETS_S.to_vec(),
                            })
                    })
                    .collect(),
                aggregation_temporality: CUMULATIVE,
            }),
            kind => {
                let points: Vec<NumberDataPoint> = batch
                    .iter()
                    .flat_map(|s| {
                        s.points
                            .iter()
                            .filter(|p| p.metric.name == m.name)
                            .map(|p| NumberDataPoint {
                                attributes: attrs(&p.labels),
                                start_time_unix_nano: ns(s.start_ms),
                                time_unix_nano: ns(s.at_ms),
                                as_int: p.value as i64,
                                as_double: None,
                            })
                    })
                    .collect();
                if kind == MetricKind::Gauge {
                    Data::Gauge(Gauge {
                        data_points: points,
                    })
                } else {
                    Data::Sum(Sum {
                        data_points: points,
                        aggregation_temporality: CUMULATIVE,
                        is_monotonic: true,
                    })
                }
            }
        };
        let empty = match &data {
            Data::Gauge(g) => g.data_points.is_empty(),
            Data::Sum(s) => s.data_points.is_empty(),
            Data::Histogram(h) => h.data_points.is_empty(),
        };
        if !empty {
            metrics.push(Metric {
                name: m.base_name().into(),
                description: m.help.into(),
                unit: m.unit.into(),
                data: Some(data),
            });
        }
    }
    metrics.extend(custom_metrics(batch));
    let mut resource = vec![kv("service.name", "pado")];
    resource.extend(
        first
            .common
            .iter()
            .map(|(k, v)| kv(&format!("pado.{k}"), v)),
    );
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource,
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "pado".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                metrics,
            }],
        }],
    }
}

/// A k6 script's metrics as OTLP metrics ([`crate::custom`]), one per name and
/// kind with a point per tag set and second: values as doubles.
fn custom_metrics(batch: &[&Snapshot]) -> Vec<Metric> {
    let ns = |ms: i64| (ms.max(0) as u64).saturating_mul(1_000_000);
    let mut by_name: BTreeMap<String, Metric> = BTreeMap::new();
    let number = |s: &Snapshot, c: &CustomPoint, v: f64| NumberDataPoint {
        attributes: attrs(&c.labels),
        start_time_unix_nano: ns(s.start_ms),
        time_unix_nano: ns(s.at_ms),
        as_int: 0,
        as_double: Some(v),
    };
    let mut push = |name: String, unit: &str, empty: Data, point: DataPoint| {
        let m = by_name.entry(name.clone()).or_insert_with(|| Metric {
            name,
            description: "a k6 script's own metric".into(),
            unit: unit.into(),
            data: Some(empty),
        });
        match (&mut m.data, point) {
            (Some(Data::Sum(x)), DataPoint::Number(p)) => x.data_points.push(p),
            (Some(Data::Gauge(x)), DataPoint::Number(p)) => x.data_points.push(p),
            (Some(Data::Histogram(x)), DataPoint::Histogram(p)) => x.data_points.push(p),
            // A name written as two kinds (k6 refuses it): the first kind's points.
            _ => {}
        }
    };
    let sum = || {
        Data::Sum(Sum {
            data_points: Vec::new(),
            aggregation_temporality: CUMULATIVE,
            is_monotonic: true,
        })
    };
    for s in batch {
        for c in &s.custom {
            let base = sanitised_name(&c.name);
            match c.kind {
                CustomKind::Counter => {
                    push(base, "1", sum(), DataPoint::Number(number(s, c, c.sum)))
                }
                CustomKind::Gauge => push(
                    base,
                    "1",
                    Data::Gauge(Gauge {
                        data_points: Vec::new(),
                    }),
                    DataPoint::Number(number(s, c, c.last)),
                ),
                CustomKind::Rate => {
                    let p = number(s, c, c.nonzero as f64);
                    push(format!("{base}_passes"), "1", sum(), DataPoint::Number(p));
                    let p = number(s, c, c.count as f64);
                    push(format!("{base}_samples"), "1", sum(), DataPoint::Number(p));
                }
                CustomKind::Trend => push(
                    c.histogram_name(),
                    if c.is_time { "s" } else { "1" },
                    Data::Histogram(Histogram {
                        data_points: Vec::new(),
                        aggregation_temporality: CUMULATIVE,
                    }),
                    DataPoint::Histogram(HistogramDataPoint {
                        attributes: attrs(&c.labels),
                        start_time_unix_nano: ns(s.start_ms),
                        time_unix_nano: ns(s.at_ms),
                        count: c.count,
                        sum: Some(c.out_sum()),
                        bucket_counts: c.bucket_counts(),
                        explicit_bounds: c.bounds().to_vec(),
                    }),
                ),
            }
        }
    }
    by_name.into_values().collect()
}

/// A point of either shape, for [`custom_metrics`].
enum DataPoint {
    Number(NumberDataPoint),
    Histogram(HistogramDataPoint),
}

/// The HTTP body.
pub fn body(batch: &[&Snapshot]) -> Vec<u8> {
    prost::Message::encode_to_vec(&request(batch))
}

/// Decode a body (tests and the testkit's receiver).
pub fn decode(body: &[u8]) -> Result<ExportMetricsServiceRequest, String> {
    <ExportMetricsServiceRequest as prost::Message>::decode(body).map_err(|e| e.to_string())
}

/// The `Content-Type` of a body.
pub const CONTENT_TYPE: &str = "application/x-protobuf";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{labels, second};
    use crate::state::State;

    #[test]
    fn sums_and_histograms_round_trip() {
        let mut st = State::new(labels());
        let a = st.fold(&second(0, "검색", 5, 1, 3), 10_000);
        let b = st.fold(&second(1, "검색", 7, 0, 30), 11_000);
        let req = decode(&body(&[&a, &b])).unwrap();
        let rm = &req.resource_metrics[0];
        let res = &rm.resource.as_ref().unwrap().attributes;
        assert!(res
            .iter()
            .any(|k| k.key == "pado.run" && k.value.as_ref().unwrap().string_value == "run-1"));
        let ms = &rm.scope_metrics[0].metrics;
        let reqs = ms.iter().find(|m| m.name == "pado_http_reqs").unwrap();
        let Some(Data::Sum(sum)) = &reqs.data else {
            panic!("not a sum")
        };
        assert!(sum.is_monotonic);
        let last: i64 = sum
            .data_points
            .iter()
            .filter(|p| p.time_unix_nano == 11_000_000_000)
            .map(|p| p.as_int)
            .sum();
        assert_eq!(last, 13);
        assert_eq!(sum.data_points[0].start_time_unix_nano, 9_000_000_000);
        let h = ms
            .iter()
            .find(|m| m.name == "pado_http_req_duration_seconds")
            .unwrap();
        let Some(Data::Histogram(h)) = &h.data else {
            panic!("not a histogram")
        };
        let p = h.data_points.last().unwrap();
        assert_eq!(p.count, 13);
        assert_eq!(p.bucket_counts.len(), p.explicit_bounds.len() + 1);
        assert_eq!(p.bucket_counts.iter().sum::<u64>(), 13);
    }
}

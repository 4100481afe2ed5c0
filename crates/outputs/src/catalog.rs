//! Every metric the outputs write: one list, so the encoders, the docs and the
//! Grafana dashboard's test agree on names.

/// How a metric behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Monotonic, cumulative from the run's start.
    Counter,
    /// A value at the end of each second.
    Gauge,
    /// A classic histogram (fixed buckets, cumulative from the run's start).
    Histogram,
}

/// One metric as the outputs write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    /// Its Prometheus name (InfluxDB measurements and OTLP metrics take the name
    /// without the `_total` suffix).
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// What it counts (the Prometheus HELP and OTLP description).
    pub help: &'static str,
    /// OTLP unit (UCUM).
    pub unit: &'static str,
    /// Its labels besides `run` (and `generator` for a segment of a split test).
    pub labels: &'static [&'static str],
}

impl Metric {
    /// The name without a counter's `_total` (InfluxDB measurement, OTLP metric).
    pub fn base_name(&self) -> &'static str {
        self.name.strip_suffix("_total").unwrap_or(self.name)
    }
}

/// Requests completed, by step and answer (`status`: the code, or the transport
/// error's category for requests without one; `expected`: `true` unless the
/// request failed by its status or transport). Step tags add `tag_<name>` labels.
pub const HTTP_REQS: Metric = Metric {
    name: "pado_http_reqs_total",
    kind: MetricKind::Counter,
    help: "HTTP requests completed, by step and status (or transport error category)",
    unit: "{request}",
    labels: &["scenario", "step", "status", "expected"],
};
/// Requests that failed (by status, transport or a check): k6's `http_req_failed`.
pub const HTTP_REQ_FAILED: Metric = Metric {
    name: "pado_http_req_failed_total",
    kind: MetricKind::Counter,
    help: "HTTP requests that failed (status, transport error or check)",
    unit: "{request}",
    labels: &["scenario", "step"],
};
/// Failed requests by the report's error categories (`http_503`, `timeout`, `check`…).
pub const HTTP_REQ_ERRORS: Metric = Metric {
    name: "pado_http_req_errors_total",
    kind: MetricKind::Counter,
    help: "Failed HTTP requests by error category, as the report's error table",
    unit: "{request}",
    labels: &["scenario", "step", "category"],
};
/// `http_req_duration` as a classic histogram in seconds.
pub const HTTP_REQ_DURATION: Metric = Metric {
    name: "pado_http_req_duration_seconds",
    kind: MetricKind::Histogram,
    help: "HTTP request duration (sending + waiting + receiving), seconds",
    unit: "s",
    labels: &["scenario", "step"],
};
/// Bytes written.
pub const DATA_SENT: Metric = Metric {
    name: "pado_data_sent_bytes_total",
    kind: MetricKind::Counter,
    help: "Bytes sent",
    unit: "By",
    labels: &["scenario", "step"],
};
/// Bytes read.
pub const DATA_RECEIVED: Metric = Metric {
    name: "pado_data_received_bytes_total",
    kind: MetricKind::Counter,
    help: "Bytes received",
    unit: "By",
    labels: &["scenario", "step"],
};
/// Iterations that ran to their end.
pub const ITERATIONS: Metric = Metric {
    name: "pado_iterations_total",
    kind: MetricKind::Counter,
    help: "Iterations completed",
    unit: "{iteration}",
    labels: &["scenario"],
};
/// Open model: scheduled iterations no VU was free for.
pub const DROPPED_ITERATIONS: Metric = Metric {
    name: "pado_dropped_iterations_total",
    kind: MetricKind::Counter,
    help: "Scheduled iterations that could not start (open model, every VU busy)",
    unit: "{iteration}",
    labels: &["scenario"],
};
/// Checks, passed and failed.
pub const CHECKS: Metric = Metric {
    name: "pado_checks_total",
    kind: MetricKind::Counter,
    help: "Checks evaluated, by check and result (pass, fail)",
    unit: "{check}",
    labels: &["check", "result"],
};
/// Active VUs.
pub const VUS: Metric = Metric {
    name: "pado_vus",
    kind: MetricKind::Gauge,
    help: "Active virtual users at the end of the second",
    unit: "{vu}",
    labels: &[],
};
/// Allocated VUs.
pub const VUS_MAX: Metric = Metric {
    name: "pado_vus_max",
    kind: MetricKind::Gauge,
    help: "Allocated virtual users at the end of the second",
    unit: "{vu}",
    labels: &[],
};

/// Events received by `sse:` steps.
pub const SSE_EVENTS: Metric = Metric {
    name: "pado_sse_events_total",
    kind: MetricKind::Counter,
    help: "Server-Sent Events received by sse: steps",
    unit: "{event}",
    labels: &["scenario", "step"],
};
/// Streams read as an LLM's answer (`sse: {llm: true}`).
pub const LLM_REQUESTS: Metric = Metric {
    name: "pado_llm_requests_total",
    kind: MetricKind::Counter,
    help: "Event streams read as an LLM's answer",
    unit: "{request}",
    labels: &["scenario", "step"],
};
/// Output tokens of LLM streams: `rate()` of it is the tokens per second.
pub const LLM_OUTPUT_TOKENS: Metric = Metric {
    name: "pado_llm_output_tokens_total",
    kind: MetricKind::Counter,
    help: "Output tokens of LLM streams (the server's usage count, else events with token text)",
    unit: "{token}",
    labels: &["scenario", "step"],
};
/// `llm_ttft` as a classic histogram in seconds.
pub const LLM_TTFT: Metric = Metric {
    name: "pado_llm_ttft_seconds",
    kind: MetricKind::Histogram,
    help: "Time to first token of LLM streams, seconds",
    unit: "s",
    labels: &["scenario", "step"],
};
/// `llm_itl` as a classic histogram in seconds: every gap between two tokens.
pub const LLM_ITL: Metric = Metric {
    name: "pado_llm_itl_seconds",
    kind: MetricKind::Histogram,
    help: "Inter-token latency of LLM streams (every gap between two tokens), seconds",
    unit: "s",
    labels: &["scenario", "step"],
};
/// `llm_tpot` as a classic histogram in seconds: one value per stream.
pub const LLM_TPOT: Metric = Metric {
    name: "pado_llm_tpot_seconds",
    kind: MetricKind::Histogram,
    help: "Time per output token after the first of LLM streams, seconds",
    unit: "s",
    labels: &["scenario", "step"],
};

/// Every metric written, in the order outputs write them.
pub const ALL: [Metric; 17] = [
    HTTP_REQS,
    HTTP_REQ_FAILED,
    HTTP_REQ_ERRORS,
    HTTP_REQ_DURATION,
    DATA_SENT,
    DATA_RECEIVED,
    ITERATIONS,
    DROPPED_ITERATIONS,
    CHECKS,
    VUS,
    VUS_MAX,
    SSE_EVENTS,
    LLM_REQUESTS,
    LLM_OUTPUT_TOKENS,
    LLM_TTFT,
    LLM_ITL,
    LLM_TPOT,
];

/// Upper bounds of every histogram's buckets in seconds (`+Inf` is added):
/// fixed, so series from different runs and generators add up.
pub const DURATION_BUCKETS_S: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Every series name a Prometheus query can name: counters and gauges as they are,
/// histograms as `_bucket`, `_sum` and `_count`.
pub fn prometheus_names() -> Vec<String> {
    ALL.iter()
        .flat_map(|m| match m.kind {
            MetricKind::Histogram => ["_bucket", "_sum", "_count"]
                .iter()
                .map(|s| format!("{}{s}", m.name))
                .collect::<Vec<_>>(),
            _ => vec![m.name.to_string()],
        })
        .collect()
}

/// The labels every series has (`generator` only for a segment of a split test).
pub const COMMON_LABELS: [&str; 2] = ["run", "generator"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prometheus_names_and_unique() {
        let names = prometheus_names();
        let mut set = std::collections::BTreeSet::new();
        for n in &names {
            assert!(n.starts_with("pado_"), "{n}");
            assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{n}");
            assert!(set.insert(n.clone()), "{n} twice");
        }
        assert!(names.contains(&"pado_http_req_duration_seconds_bucket".to_string()));
        assert!(DURATION_BUCKETS_S.windows(2).all(|w| w[0] < w[1]));
    }
}

/// The Grafana dashboard in the repository (`dashboards/pado-prometheus.json`)
/// names only metrics the Prometheus output writes.
#[cfg(test)]
mod dashboard_tests {
    use super::*;

    /// Every `pado_…` identifier in a PromQL expression.
    fn metric_names(expr: &str) -> Vec<String> {
        let mut out = Vec::new();
        let b = expr.as_bytes();
        let mut i = 0;
        while let Some(at) = expr[i..].find("pado_") {
            let start = i + at;
            let boundary = start == 0 || {
                let c = b[start - 1];
                !(c.is_ascii_alphanumeric() || c == b'_')
            };
            let mut end = start;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                end += 1;
            }
            if boundary {
                out.push(expr[start..end].to_string());
            }
            i = end;
        }
        out
    }

    #[test]
    fn every_panel_queries_metrics_pado_writes() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../dashboards/pado-prometheus.json"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let d: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
        let known = prometheus_names();
        let panels = d["panels"].as_array().expect("panels");
        assert!(panels.len() >= 10);
        let mut used = std::collections::BTreeSet::new();
        for p in panels {
            let targets = p["targets"].as_array().unwrap_or_else(|| panic!("{p}"));
            assert!(!targets.is_empty(), "{}", p["title"]);
            for t in targets {
                let expr = t["expr"].as_str().unwrap_or_else(|| panic!("{t}"));
                let names = metric_names(expr);
                assert!(!names.is_empty(), "{}: {expr}", p["title"]);
                for n in names {
                    assert!(
                        known.contains(&n),
                        "{}: `{n}` is not written by pado",
                        p["title"]
                    );
                    used.insert(n);
                }
            }
        }
        for v in d["templating"]["list"].as_array().unwrap() {
            if let Some(q) = v["definition"].as_str() {
                for n in metric_names(q) {
                    assert!(known.contains(&n), "variable {}: `{n}`", v["name"]);
                }
            }
        }
        // The report's panels: throughput, latency, errors, VUs.
        for n in [
            "pado_http_reqs_total",
            "pado_http_req_duration_seconds_bucket",
            "pado_http_req_errors_total",
            "pado_vus",
        ] {
            assert!(used.contains(n), "no panel reads {n}");
        }
    }

    #[test]
    fn the_name_scanner_finds_names_and_only_names() {
        assert_eq!(
            metric_names("sum(rate(pado_http_reqs_total{run=\"x_pado_y\"}[1m])) / pado_vus"),
            vec!["pado_http_reqs_total", "pado_vus"]
        );
    }
}

//! The k6 metric names pado knows, with their kind and unit.
//!
//! Users bring thresholds and dashboards over from k6, so pado reports its
//! measurements under k6's metric names. Keeping the list in one table means the
//! threshold parser (which must reject `rate` on a trend, or suggest
//! `http_req_duration` for a typo) and the reports (which must print the right unit)
//! can never disagree about what a metric is.

use std::fmt;

use serde::Serialize;

/// How a metric's samples are summarised, which decides the aggregations a threshold
/// may use on it (the same four kinds as k6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// A distribution of values (timings): thresholds use `avg`, `min`, `max`, `med`
    /// or `p(N)`.
    Trend,
    /// The fraction of non-zero samples (e.g. failed requests): thresholds use `rate`.
    Rate,
    /// A running total: thresholds use `count`, or `rate` for the total per second.
    Counter,
    /// The last observed value (e.g. active VUs): thresholds use `value`, `min` or
    /// `max`.
    Gauge,
}

impl MetricKind {
    /// Lower-case name as k6 spells it, so error messages read like k6 documentation.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Trend => "trend",
            MetricKind::Rate => "rate",
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}

impl fmt::Display for MetricKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One known metric: its k6 name, kind and unit, and a one-line description, so that
/// thresholds can be validated and reports can label values without guessing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MetricInfo {
    /// The k6 name, e.g. `http_req_duration`.
    pub name: &'static str,
    /// Which aggregations apply.
    pub kind: MetricKind,
    /// Unit of the values: `"ms"`, `"bytes"`, `"vus"`, or `""` for plain numbers and
    /// fractions.
    pub unit: &'static str,
    /// What the metric measures, for help texts and reports.
    pub description: &'static str,
}

const fn metric(
    name: &'static str,
    kind: MetricKind,
    unit: &'static str,
    description: &'static str,
) -> MetricInfo {
    MetricInfo {
        name,
        kind,
        unit,
        description,
    }
}

static METRICS: [MetricInfo; 40] = [
    metric(
        "http_req_duration",
        MetricKind::Trend,
        "ms",
        "total time of a request: sending + waiting + receiving",
    ),
    metric(
        "http_req_waiting",
        MetricKind::Trend,
        "ms",
        "time to first byte: from the end of sending to the first response byte",
    ),
    metric(
        "http_req_dns",
        MetricKind::Trend,
        "ms",
        "time spent resolving the host name when a connection was made (0 when reused or cached)",
    ),
    metric(
        "http_req_connecting",
        MetricKind::Trend,
        "ms",
        "time spent establishing the TCP connection",
    ),
    metric(
        "http_req_tls_handshaking",
        MetricKind::Trend,
        "ms",
        "time spent in the TLS handshake",
    ),
    metric(
        "http_req_sending",
        MetricKind::Trend,
        "ms",
        "time spent writing the request",
    ),
    metric(
        "http_req_receiving",
        MetricKind::Trend,
        "ms",
        "time spent reading the response after its first byte",
    ),
    metric(
        "http_req_blocked",
        MetricKind::Trend,
        "ms",
        "time spent waiting for a free connection before the request started",
    ),
    metric(
        "iteration_duration",
        MetricKind::Trend,
        "ms",
        "time to run one full iteration of a scenario",
    ),
    metric(
        "group_duration",
        MetricKind::Trend,
        "ms",
        "time to run the steps of one `group:` block (select one with `{group:::name}`)",
    ),
    metric(
        "ws_connecting",
        MetricKind::Trend,
        "ms",
        "WebSocket handshake: from the start of the connect (TCP, TLS) to the server's 101",
    ),
    metric(
        "ws_session_duration",
        MetricKind::Trend,
        "ms",
        "WebSocket session: from the start of the connect to the end of the close",
    ),
    metric(
        "ws_msg_latency",
        MetricKind::Trend,
        "ms",
        "from a WebSocket `send` to the arrival of the message the next `expect` matched",
    ),
    metric(
        "llm_ttft",
        MetricKind::Trend,
        "ms",
        "time to first token of an LLM stream (`sse: {llm: true}`): from the request's start to the first event with token text",
    ),
    metric(
        "llm_itl",
        MetricKind::Trend,
        "ms",
        "inter-token latency of an LLM stream: every gap between two tokens",
    ),
    metric(
        "llm_tpot",
        MetricKind::Trend,
        "ms",
        "time per output token of an LLM stream after the first: (last token - first token) / (tokens - 1), one value per request",
    ),
    metric(
        "llm_output_tokens",
        MetricKind::Trend,
        "tokens",
        "output tokens of one LLM stream (the server's `usage` count when it sends one, else the events with token text)",
    ),
    metric(
        "llm_input_tokens",
        MetricKind::Trend,
        "tokens",
        "input tokens of one LLM stream's prompt, when pado sized it (`sse.prompt`): the prompt lengths a time to first token is read against",
    ),
    metric(
        "llm_tokens_per_s",
        MetricKind::Trend,
        "tokens/s",
        "output tokens per second of one LLM stream, over its whole time",
    ),
    metric(
        "llm_tokens",
        MetricKind::Counter,
        "",
        "output tokens of every LLM stream together (`rate`: the run's output tokens per second)",
    ),
    metric(
        "sse_events",
        MetricKind::Counter,
        "",
        "Server-Sent Events received by `sse:` steps",
    ),
    metric(
        "grpc_req_duration",
        MetricKind::Trend,
        "ms",
        "a gRPC call of a `grpc:` step: from the request's write to the trailers (a stream's last message)",
    ),
    metric(
        "ws_session_failed",
        MetricKind::Rate,
        "",
        "fraction of WebSocket sessions that failed (handshake, early close, expect timeout, protocol)",
    ),
    metric(
        "http_req_failed",
        MetricKind::Rate,
        "",
        "fraction of requests that failed (transport error or unexpected status)",
    ),
    metric(
        "checks",
        MetricKind::Rate,
        "",
        "fraction of checks that passed",
    ),
    metric(
        "http_reqs",
        MetricKind::Counter,
        "",
        "number of requests sent",
    ),
    metric(
        "iterations",
        MetricKind::Counter,
        "",
        "number of completed iterations",
    ),
    metric(
        "data_sent",
        MetricKind::Counter,
        "bytes",
        "bytes written to the network",
    ),
    metric(
        "data_received",
        MetricKind::Counter,
        "bytes",
        "bytes read from the network",
    ),
    metric(
        "grpc_streams",
        MetricKind::Counter,
        "",
        "number of server-streaming gRPC calls ended",
    ),
    metric(
        "grpc_streams_msgs_received",
        MetricKind::Counter,
        "",
        "number of messages received on server-streaming gRPC calls",
    ),
    metric(
        "data_received_encoded",
        MetricKind::Counter,
        "bytes",
        "bodies of compressed responses as received (part of data_received)",
    ),
    metric(
        "data_received_decoded",
        MetricKind::Counter,
        "bytes",
        "bodies of compressed responses after decoding",
    ),
    metric(
        "ws_sessions",
        MetricKind::Counter,
        "",
        "number of WebSocket sessions ended (successful or not)",
    ),
    metric(
        "ws_msgs_sent",
        MetricKind::Counter,
        "",
        "number of WebSocket messages sent",
    ),
    metric(
        "ws_msgs_received",
        MetricKind::Counter,
        "",
        "number of WebSocket data messages received",
    ),
    metric(
        "dropped_iterations",
        MetricKind::Counter,
        "",
        "iterations an arrival-rate scenario could not start for lack of VUs",
    ),
    metric(
        "late_iterations",
        MetricKind::Counter,
        "",
        "iterations that started later than their scheduled time",
    ),
    metric(
        "vus",
        MetricKind::Gauge,
        "vus",
        "number of active virtual users",
    ),
    metric(
        "vus_max",
        MetricKind::Gauge,
        "vus",
        "number of allocated virtual users",
    ),
];

/// Finds a metric by its exact k6 name; `None` for anything pado does not measure,
/// so callers can report the name as unknown instead of silently never matching.
pub fn lookup(name: &str) -> Option<&'static MetricInfo> {
    METRICS
        .iter()
        .find(|m| m.name == name)
        .or_else(|| custom_lock().iter().copied().find(|m| m.name == name))
}

/// The metrics a k6 script made (`new Trend("RTT")`), known to this process
/// from the moment the script (or a result directory holding them) declares
/// them, so that thresholds and reports on them read like the built-in ones.
/// Each name is leaked once: a run declares a handful, never per request.
static CUSTOM: std::sync::Mutex<Vec<&'static MetricInfo>> = std::sync::Mutex::new(Vec::new());

fn custom_lock() -> std::sync::MutexGuard<'static, Vec<&'static MetricInfo>> {
    CUSTOM.lock().unwrap_or_else(|e| e.into_inner())
}

/// Declare a script's own metric `name` of `kind` (`is_time`: values are ms), as
/// k6's `k6/metrics` constructors do. Declaring it again with the same kind is
/// the same metric (a built-in one too, as in k6); another kind is refused with
/// k6's reason, since one name cannot hold two kinds of values.
pub fn register_custom(
    name: &str,
    kind: MetricKind,
    is_time: bool,
) -> Result<&'static MetricInfo, String> {
    let mut custom = custom_lock();
    let known = METRICS
        .iter()
        .find(|m| m.name == name)
        .or_else(|| custom.iter().copied().find(|m| m.name == name));
    if let Some(m) = known {
        // k6 compares the value type too: a time trend is not a plain one, and a
        // built-in count of bytes is no script's counter.
        let same = m.kind == kind && (m.unit == "ms") == is_time && m.unit != "bytes";
        return if same {
            Ok(m)
        } else {
            let what = |k: MetricKind, u: &str| match u {
                "ms" => format!("{k} of times"),
                "bytes" => format!("{k} of bytes"),
                _ => k.to_string(),
            };
            Err(format!(
                "metric `{name}` already exists as a {}, not a {}",
                what(m.kind, m.unit),
                what(kind, if is_time { "ms" } else { "" })
            ))
        };
    }
    let info: &'static MetricInfo = Box::leak(Box::new(MetricInfo {
        name: Box::leak(name.to_string().into_boxed_str()),
        kind,
        unit: if is_time { "ms" } else { "" },
        description: "a metric the script made (k6/metrics)",
    }));
    custom.push(info);
    Ok(info)
}

/// Every known metric in a stable order (trends, rates, counters, gauges), for help
/// texts, typo suggestions and reports that list all metrics.
pub fn all() -> &'static [MetricInfo] {
    &METRICS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_known_and_unknown() {
        let d = lookup("http_req_duration").unwrap();
        assert_eq!(d.kind, MetricKind::Trend);
        assert_eq!(d.unit, "ms");
        assert_eq!(lookup("http_req_failed").unwrap().kind, MetricKind::Rate);
        assert_eq!(lookup("data_sent").unwrap().unit, "bytes");
        assert_eq!(lookup("vus_max").unwrap().kind, MetricKind::Gauge);
        assert!(lookup("http_req_duraton").is_none());
        assert!(lookup("").is_none());
    }

    #[test]
    fn names_are_unique_and_complete() {
        let names: Vec<&str> = all().iter().map(|m| m.name).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(n), "duplicate {n}");
        }
        let count = |k| all().iter().filter(|m| m.kind == k).count();
        assert_eq!(count(MetricKind::Trend), 20);
        assert_eq!(count(MetricKind::Rate), 3);
        assert_eq!(count(MetricKind::Counter), 15);
        assert_eq!(count(MetricKind::Gauge), 2);
        // Trends are times in ms, but for an LLM stream's tokens and tokens/s.
        assert!(all()
            .iter()
            .filter(|m| m.kind == MetricKind::Trend)
            .all(|m| m.unit == "ms"
                || matches!(
                    m.name,
                    "llm_output_tokens" | "llm_input_tokens" | "llm_tokens_per_s"
                )));
    }

    #[test]
    fn kind_serializes_lowercase() {
        assert_eq!(
            serde_json::to_string(&MetricKind::Counter).unwrap(),
            "\"counter\""
        );
    }

    #[test]
    fn a_scripts_metric_is_known_once_declared_with_one_kind() {
        let name = "catalog_test_응답시간";
        assert!(lookup(name).is_none());
        let m = register_custom(name, MetricKind::Trend, true).unwrap();
        assert_eq!((m.kind, m.unit), (MetricKind::Trend, "ms"));
        assert_eq!(lookup(name).map(|m| m.kind), Some(MetricKind::Trend));
        assert!(register_custom(name, MetricKind::Trend, true).is_ok());
        let e = register_custom(name, MetricKind::Counter, false).unwrap_err();
        assert!(e.contains(name) && e.contains("trend"), "{e}");
        // Built-in names keep their kind and unit, as k6 keeps them.
        assert!(register_custom("http_reqs", MetricKind::Counter, false).is_ok());
        assert!(register_custom("http_req_duration", MetricKind::Trend, false).is_err());
        assert!(register_custom("data_sent", MetricKind::Counter, false).is_err());
        // Thresholds on it parse as on a built-in trend, and refuse what a
        // trend has not.
        let t = crate::thresholds::parse(&format!("{name}{{kind:읽기}}"), "p(95)<200").unwrap();
        assert_eq!(t.metric, name);
        assert_eq!(t.tags, vec![("kind".to_string(), "읽기".to_string())]);
        assert!(crate::thresholds::parse(name, "rate>0.5").is_err());
        // Not declared: unknown, as before.
        assert!(crate::thresholds::parse("catalog_test_never", "count>1").is_err());
    }
}

//! Which tags a threshold may filter which metric by, judged on the metric and
//! the tag alone (whether the file has such a step or scenario is the CLI's check,
//! once the plan is compiled).
//!
//! k6 tags every sample with system tags (`status`, `method`, `expected_response`,
//! `group`, `scenario`, ...). pado keeps per-second series per step, with counts
//! of responses per status but one latency histogram per step, so some of k6's
//! tag filters have an exact answer in pado's data and some do not. A filter with
//! no exact answer is refused here with the reason, because a threshold that is
//! accepted and then never has data (or has the wrong data) fails or passes a CI
//! gate for nothing.

/// Metrics of HTTP requests, read from the steps' series: any tag that selects
/// steps applies, `method` too.
const HTTP_METRICS: [&str; 14] = [
    "http_req_duration",
    "http_req_waiting",
    "http_req_dns",
    "http_req_connecting",
    "http_req_tls_handshaking",
    "http_req_sending",
    "http_req_receiving",
    "http_req_blocked",
    "http_req_failed",
    "http_reqs",
    "data_sent",
    "data_received",
    "data_received_encoded",
    "data_received_decoded",
];

/// Metrics of `ws:`, `grpc:` and `sse:` steps, read from the steps' series: selected by
/// step, scenario and group, but these steps send no HTTP method of their own.
const SESSION_METRICS: [&str; 18] = [
    "llm_ttft",
    "llm_itl",
    "llm_tpot",
    "llm_output_tokens",
    "llm_input_tokens",
    "llm_tokens_per_s",
    "llm_tokens",
    "sse_events",
    "ws_connecting",
    "ws_session_duration",
    "ws_msg_latency",
    "ws_session_failed",
    "ws_sessions",
    "ws_msgs_sent",
    "ws_msgs_received",
    "grpc_req_duration",
    "grpc_streams",
    "grpc_streams_msgs_received",
];

/// Metrics of one whole run, with no tag to filter by.
const RUN_GAUGES: [&str; 2] = ["vus", "vus_max"];

/// Whether `tag` scopes a threshold to part of the run (`stage`, `window`) rather
/// than selecting series: every per-second metric can be scoped.
pub(super) fn is_scope(tag: &str) -> bool {
    matches!(tag, super::scope::STAGE_TAG | super::scope::WINDOW_TAG)
}

/// Whether `metric` is one of the run-wide gauges, which no tag filters.
pub(super) fn is_run_gauge(metric: &str) -> bool {
    RUN_GAUGES.contains(&metric)
}

/// Why `metric{tag:value}` cannot be answered, or `None` when it can.
pub(super) fn refusal(metric: &str, tag: &str, value: &str) -> Option<String> {
    match tag {
        _ if RUN_GAUGES.contains(&metric) => Some(format!(
            "{metric} is counted for the whole run, not per {tag}; remove the tag filter"
        )),
        "status" | "expected_response" if metric != "http_reqs" => Some(format!(
            "pado counts responses per status, but keeps one latency histogram and one failure count per step, not per {}; `{tag}` filters `http_reqs` only (count or rate), e.g. `http_reqs{{{tag}:{}}}: count > 0`; for {metric}, select the step with `step:NAME`",
            if tag == "status" { "status" } else { "outcome" },
            if tag == "status" { "200" } else { "true" },
        )),
        "status" => match value.parse::<u16>() {
            Ok(100..=599) => None,
            _ => Some(format!(
                "`{value}` is not an HTTP status; write a code from 100 to 599, e.g. `status:200` (pado counts requests that got no response under `http_req_failed`, not as status 0)"
            )),
        },
        "expected_response" => (!matches!(value, "true" | "false")).then(|| {
            format!("`{value}` is neither `true` nor `false`")
        }),
        "method" if !HTTP_METRICS.contains(&metric) && metric != "checks" => Some(format!(
            "{metric} is not measured per HTTP request, so not per method; `method` filters the http_req_*, http_reqs, data_* metrics and checks"
        )),
        "method" => (value.is_empty() || value.chars().any(|c| !c.is_ascii_uppercase()))
            .then(|| {
                format!(
                    "methods are upper case, as sent: `method:{}`",
                    value.to_ascii_uppercase()
                )
            }),
        "group" if !value.starts_with("::") => Some(format!(
            "k6 writes a group as its path from the root: `group:::{value}`"
        )),
        "group"
            if !HTTP_METRICS.contains(&metric)
                && !SESSION_METRICS.contains(&metric)
                && !matches!(metric, "checks" | "group_duration") =>
        {
            Some(format!(
                "{metric} is measured per scenario, not per group; `group` filters group_duration, checks and the per-request metrics"
            ))
        }
        _ if metric == "group_duration" && !matches!(tag, "group" | "scenario") => Some(format!(
            "group_duration is measured per `group:` block; filter it by `group` or `scenario`, not `{tag}`"
        )),
        _ => None,
    }
}

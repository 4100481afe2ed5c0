//! Sums of samples: per series (a step, later a step with tags), per scenario, per
//! second and for the whole run. All of it merges exactly, which is what lets one
//! second from many worker threads, or one run from many generators, add up.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::generator::{GeneratorSecond, GeneratorStats};
use crate::{ErrorKind, LatencyHistogram, RequestSample};

/// Which timing phase a histogram holds; the order of [`SeriesStats::hist`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// `http_req_duration`.
    Duration,
    /// `http_req_blocked`.
    Blocked,
    /// `http_req_connecting`.
    Connecting,
    /// `http_req_tls_handshaking`.
    TlsHandshaking,
    /// `http_req_sending`.
    Sending,
    /// `http_req_waiting` (time to first byte).
    Waiting,
    /// `http_req_receiving`.
    Receiving,
    /// `http_req_dns`: name resolution when a connection was made. Last in storage
    /// order (added after the others); result directories written before it have
    /// none, which reads as an empty histogram: no data, not zeros.
    Dns,
}

impl Phase {
    /// All phases in storage order.
    pub const ALL: [Phase; 8] = [
        Phase::Duration,
        Phase::Blocked,
        Phase::Connecting,
        Phase::TlsHandshaking,
        Phase::Sending,
        Phase::Waiting,
        Phase::Receiving,
        Phase::Dns,
    ];

    /// Short name used in result files.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Duration => "duration",
            Phase::Blocked => "blocked",
            Phase::Connecting => "connecting",
            Phase::TlsHandshaking => "tls_handshaking",
            Phase::Sending => "sending",
            Phase::Waiting => "waiting",
            Phase::Receiving => "receiving",
            Phase::Dns => "dns",
        }
    }

    /// The k6 metric this phase is reported as.
    pub fn metric_name(self) -> &'static str {
        match self {
            Phase::Duration => "http_req_duration",
            Phase::Blocked => "http_req_blocked",
            Phase::Connecting => "http_req_connecting",
            Phase::TlsHandshaking => "http_req_tls_handshaking",
            Phase::Sending => "http_req_sending",
            Phase::Waiting => "http_req_waiting",
            Phase::Receiving => "http_req_receiving",
            Phase::Dns => "http_req_dns",
        }
    }

    /// Phase for a k6 metric name.
    pub fn from_metric_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.metric_name() == name)
    }
}

/// Identity of a series: the step name users gave (or the request line in quick mode)
/// and its tags, sorted so that equal sets compare equal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeriesKey {
    /// Step name.
    pub name: String,
    /// Tags, sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<(String, String)>,
}

impl SeriesKey {
    /// A key without tags.
    pub fn named(name: impl Into<String>) -> Self {
        SeriesKey {
            name: name.into(),
            tags: Vec::new(),
        }
    }
}

/// Everything measured for one series over some time span.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesStats {
    /// Which series.
    pub key: SeriesKey,
    /// Requests completed (successfully or not).
    pub requests: u64,
    /// Requests that count as failed.
    pub failed: u64,
    /// Of `failed`, those that failed only a check.
    pub check_failed: u64,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// Requests sent again on a new connection because the server had closed the
    /// kept-alive one before answering: not failures, but worth knowing (the server
    /// closes connections without `Connection: close`).
    pub reconnects: u64,
    /// Responses whose body was longer than `max_body` when checks or extraction
    /// needed it (they saw only the beginning).
    pub body_cut: u64,
    /// `grpc:` steps of server-streaming methods: streams ended (k6's
    /// `grpc_streams`), each also one of `requests`.
    pub grpc_streams: u64,
    /// Messages received on those streams (k6's `grpc_streams_msgs_received`).
    pub grpc_stream_msgs: u64,
    /// Messages sent on streams (k6's `grpc_streams_msgs_sent`: a k6 script's
    /// client and bidirectional streams write them).
    pub grpc_stream_msgs_sent: u64,
    /// Bodies of encoded responses (`Content-Encoding` gzip, br, zstd, deflate), in
    /// bytes as received after chunked framing (`data_received_encoded`).
    pub bytes_encoded: u64,
    /// The same bodies decoded (`data_received_decoded`).
    pub bytes_decoded: u64,
    /// Responses by status code, sorted by code (a handful of entries).
    pub status: Vec<(u16, u64)>,
    /// Of `status`, responses of 400 or more that the step expected (a `status`
    /// check naming them): not failures, so not `http_<code>` in the breakdown.
    pub expected_status: Vec<(u16, u64)>,
    /// Transport failures by [`ErrorKind::index`].
    pub errors: [u64; ErrorKind::ALL.len()],
    /// One histogram per [`Phase`], in [`Phase::ALL`] order.
    pub hist: [LatencyHistogram; Phase::ALL.len()],
    /// The step's WebSocket sessions (`ws:` steps only; `None` elsewhere, so HTTP
    /// series cost nothing more).
    pub ws: Option<Box<crate::WsStats>>,
    /// The step's event streams and LLM figures (`sse:` steps only; `None`
    /// elsewhere).
    pub sse: Option<Box<crate::SseStats>>,
}

impl SeriesStats {
    /// Empty stats for `key`.
    pub fn new(key: SeriesKey) -> Self {
        SeriesStats {
            key,
            ..Default::default()
        }
    }

    /// Add one request. This is the hot path: no allocation unless a new status code
    /// appears or a histogram has to grow.
    #[inline]
    pub fn record(&mut self, s: &RequestSample) {
        self.requests += 1;
        if s.failed {
            self.failed += 1;
            if s.failed_by_check {
                self.check_failed += 1;
            }
        }
        self.bytes_sent += s.bytes_sent;
        self.bytes_received += s.bytes_received;
        self.reconnects += u64::from(s.reconnected);
        self.body_cut += u64::from(s.body_cut);
        self.bytes_encoded += s.body_encoded;
        self.bytes_decoded += s.body_decoded;
        if let Some(e) = s.error {
            self.errors[e.index()] += 1;
        } else {
            self.bump_status(s.status, 1);
            // Failed by its status unless it did not fail, or failed by a check alone.
            if s.status >= 400 && (!s.failed || s.failed_by_check) {
                bump(&mut self.expected_status, s.status, 1);
            }
        }
        if s.error == Some(ErrorKind::Template) {
            // Never sent (its templates could not build it): no latency to add.
            return;
        }
        let p = &s.phases;
        let values = [
            p.duration_us,
            p.blocked_us,
            p.connecting_us,
            p.tls_us,
            p.sending_us,
            p.waiting_us,
            p.receiving_us,
            p.dns_us,
        ];
        for (h, v) in self.hist.iter_mut().zip(values) {
            h.record(v);
        }
    }

    /// Whether these are a `grpc:` step's calls: statuses that are gRPC codes
    /// (below 100, which no HTTP response has), ended streams, or failures by a gRPC
    /// status. Thresholds on `grpc_req_duration` and the report's gRPC block read
    /// only such series.
    pub fn is_grpc(&self) -> bool {
        self.status.iter().any(|&(c, _)| c < 100)
            || self.grpc_streams > 0
            || ErrorKind::ALL
                .iter()
                .any(|k| k.as_str().starts_with("grpc_") && self.errors[k.index()] > 0)
    }

    /// Add one ended gRPC stream of this step and the messages it brought (the
    /// call itself is recorded as a request with [`SeriesStats::record`]).
    pub fn record_grpc_stream(&mut self, msgs: u64, sent: u64) {
        self.grpc_streams += 1;
        self.grpc_stream_msgs += msgs;
        self.grpc_stream_msgs_sent += sent;
    }

    /// Add one WebSocket session of this step.
    pub fn record_ws(&mut self, s: &crate::WsSession) {
        self.ws.get_or_insert_with(Default::default).record(s);
    }

    /// Add one ended event stream of this step (the request itself is recorded
    /// with [`SeriesStats::record`]).
    pub fn record_sse(&mut self, s: &crate::SseStream) {
        self.sse.get_or_insert_with(Default::default).record(s);
    }

    /// Add one LLM stream's input tokens (its prompt as pado sized and sent it) to
    /// the step's `llm_input_tokens`.
    pub fn record_llm_input_tokens(&mut self, tokens: u64) {
        self.sse
            .get_or_insert_with(Default::default)
            .record_input_tokens(tokens);
    }

    /// Add one gap between two tokens (µs) to the step's `llm_itl`.
    #[inline]
    pub fn record_llm_itl(&mut self, us: u64) {
        self.sse.get_or_insert_with(Default::default).record_itl(us);
    }

    /// Add `msg` µs to the step's `ws_msg_latency`.
    pub fn record_ws_latency(&mut self, us: u64) {
        self.ws
            .get_or_insert_with(Default::default)
            .msg_latency
            .record(us);
    }

    /// Whether nothing was recorded (no request, no WebSocket session or message
    /// latency).
    pub fn is_empty(&self) -> bool {
        self.requests == 0
            && self
                .ws
                .as_ref()
                .is_none_or(|w| w.sessions == 0 && w.msg_latency.is_empty())
            && self
                .sse
                .as_ref()
                .is_none_or(|s| s.streams == 0 && s.itl.is_empty())
    }

    /// Count `n` responses of status `code` (a timeline read back adds each second's
    /// status counts this way).
    pub fn bump_status(&mut self, code: u16, n: u64) {
        bump(&mut self.status, code, n);
    }

    /// Count `n` responses of status `code` that the step expected (see
    /// [`SeriesStats::expected_status`]).
    pub fn bump_expected(&mut self, code: u16, n: u64) {
        bump(&mut self.expected_status, code, n);
    }

    /// Add another span's stats of the same series. Saturating, not wrapping: counts
    /// read from a file may be corrupt, and a corrupt count must not turn into a
    /// small plausible one.
    pub fn merge(&mut self, o: &SeriesStats) {
        self.requests = self.requests.saturating_add(o.requests);
        self.failed = self.failed.saturating_add(o.failed);
        self.check_failed = self.check_failed.saturating_add(o.check_failed);
        self.bytes_sent = self.bytes_sent.saturating_add(o.bytes_sent);
        self.bytes_received = self.bytes_received.saturating_add(o.bytes_received);
        self.reconnects = self.reconnects.saturating_add(o.reconnects);
        self.body_cut = self.body_cut.saturating_add(o.body_cut);
        self.grpc_streams = self.grpc_streams.saturating_add(o.grpc_streams);
        self.grpc_stream_msgs = self.grpc_stream_msgs.saturating_add(o.grpc_stream_msgs);
        self.grpc_stream_msgs_sent = self
            .grpc_stream_msgs_sent
            .saturating_add(o.grpc_stream_msgs_sent);
        self.bytes_encoded = self.bytes_encoded.saturating_add(o.bytes_encoded);
        self.bytes_decoded = self.bytes_decoded.saturating_add(o.bytes_decoded);
        for &(code, n) in &o.status {
            self.bump_status(code, n);
        }
        for &(code, n) in &o.expected_status {
            bump(&mut self.expected_status, code, n);
        }
        for (a, b) in self.errors.iter_mut().zip(o.errors.iter()) {
            *a = a.saturating_add(*b);
        }
        for (a, b) in self.hist.iter_mut().zip(o.hist.iter()) {
            a.add(b);
        }
        if let Some(w) = &o.ws {
            self.ws.get_or_insert_with(Default::default).merge(w);
        }
        if let Some(e) = &o.sse {
            self.sse.get_or_insert_with(Default::default).merge(e);
        }
    }

    /// Whether the counters agree with each other as [`SeriesStats::record`] makes
    /// them (every request a status or an error; failures among requests): a file
    /// whose counts do not is corrupt, and is refused rather than summed.
    pub fn check_consistent(&self) -> Result<(), String> {
        let total = self
            .status
            .iter()
            .map(|e| e.1)
            .chain(self.errors.iter().copied())
            .try_fold(0u64, |a, n| a.checked_add(n));
        let name = &self.key.name;
        match total {
            Some(t) if t == self.requests => {}
            Some(t) => {
                return Err(format!(
                    "series `{name}`: {} requests but statuses and errors add up to {t} (corrupt counters)",
                    self.requests
                ))
            }
            None => return Err(format!("series `{name}`: counters overflow (corrupt)")),
        }
        let expected_ok = self
            .expected_status
            .iter()
            .all(|&(c, n)| self.status.iter().any(|&(c2, m)| c2 == c && n <= m));
        if self.failed > self.requests
            || self.check_failed > self.failed
            || self.reconnects > self.requests
            || self.body_cut > self.requests
            || self.grpc_streams > self.requests
            || !expected_ok
        {
            return Err(format!(
                "series `{name}`: failures, reconnects or cut bodies exceed its {} requests (corrupt counters)",
                self.requests
            ));
        }
        if let Some(w) = &self.ws {
            w.check_consistent()
                .map_err(|e| format!("series `{name}`: {e}"))?;
        }
        if let Some(e) = &self.sse {
            e.check_consistent()
                .map_err(|e| format!("series `{name}`: {e}"))?;
            if e.streams > self.requests {
                return Err(format!(
                    "series `{name}`: {} event streams but {} requests (corrupt counters)",
                    e.streams, self.requests
                ));
            }
        }
        Ok(())
    }

    /// Histogram of one phase.
    pub fn phase(&self, p: Phase) -> &LatencyHistogram {
        &self.hist[p as usize]
    }

    /// Failure breakdown as `summary.json` names it: `http_<code>` for statuses >= 400
    /// the step did not expect, transport kinds by name, and `check_failed` for
    /// requests failed by a check alone.
    pub fn error_breakdown(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for &(code, n) in &self.status {
            let expected = self
                .expected_status
                .iter()
                .find(|(c, _)| *c == code)
                .map_or(0, |e| e.1);
            let n = n.saturating_sub(expected);
            if code >= 400 && n > 0 {
                *m.entry(format!("http_{code}")).or_insert(0) += n;
            }
        }
        for k in ErrorKind::ALL {
            let n = self.errors[k.index()];
            if n > 0 {
                *m.entry(k.as_str().to_string()).or_insert(0) += n;
            }
        }
        if self.check_failed > 0 {
            *m.entry("check_failed".to_string()).or_insert(0) += self.check_failed;
        }
        m
    }

    /// Statuses sorted by code.
    pub fn status_sorted(&self) -> BTreeMap<u16, u64> {
        self.status.iter().copied().collect()
    }
}

/// Add `n` to `code`'s count in a list sorted by code.
fn bump(v: &mut Vec<(u16, u64)>, code: u16, n: u64) {
    match v.iter().position(|(c, _)| *c >= code) {
        Some(i) if v[i].0 == code => v[i].1 = v[i].1.saturating_add(n),
        Some(i) => v.insert(i, (code, n)),
        None => v.push((code, n)),
    }
}

/// Iteration-level counts of one scenario over some time span.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScenarioStats {
    /// Scenario name.
    pub name: String,
    /// Iterations that ran to their end.
    pub iterations: u64,
    /// Iterations cut off by the end of the run or a ramp-down.
    pub interrupted: u64,
    /// Open model: scheduled iterations that could not start because every VU of the
    /// pool was busy (`dropped_iterations`).
    pub dropped: u64,
    /// Open model: scheduled arrivals that started an iteration, counted in the
    /// second they started (not when they ended, as `iterations` are). With
    /// `dropped`, the arrivals the run offered that second, whatever set its rate:
    /// the plan, a change made while it ran, a pause. Zero for a closed model and
    /// in result directories written before pado counted it.
    pub started: u64,
    /// Open model: iterations that started noticeably later than scheduled because the
    /// generator was behind (`late_iterations`).
    pub late: u64,
    /// `iteration_duration` (µs).
    pub iteration_duration: LatencyHistogram,
}

impl ScenarioStats {
    /// Empty stats for scenario `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ScenarioStats {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Whether nothing happened.
    pub fn is_empty(&self) -> bool {
        self.iterations == 0
            && self.interrupted == 0
            && self.dropped == 0
            && self.late == 0
            && self.started == 0
    }

    /// Open model: the arrivals offered in the span, started or dropped.
    pub fn arrivals(&self) -> u64 {
        self.started.saturating_add(self.dropped)
    }

    /// Add another span's stats of the same scenario.
    pub fn merge(&mut self, o: &ScenarioStats) {
        self.iterations = self.iterations.saturating_add(o.iterations);
        self.interrupted = self.interrupted.saturating_add(o.interrupted);
        self.dropped = self.dropped.saturating_add(o.dropped);
        self.late = self.late.saturating_add(o.late);
        self.started = self.started.saturating_add(o.started);
        self.iteration_duration.add(&o.iteration_duration);
    }
}

/// Passes and fails of one named check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckCounts {
    /// Times the check held.
    pub passes: u64,
    /// Times it did not.
    pub fails: u64,
}

impl CheckCounts {
    /// Add another span's counts.
    pub fn merge(&mut self, o: &CheckCounts) {
        self.passes = self.passes.saturating_add(o.passes);
        self.fails = self.fails.saturating_add(o.fails);
    }
}

/// What one worker thread measured in one second of the run. Sending it also says the
/// worker will report nothing more for this or any earlier second (a watermark), which
/// lets the aggregator close seconds exactly.
#[derive(Clone, Debug, Default)]
pub struct Interval {
    /// Which worker.
    pub worker: usize,
    /// Second of the run (0 = the first second after start).
    pub second: u32,
    /// VUs running an iteration or waiting between iterations on this worker, at flush.
    pub vus: u32,
    /// VUs allocated on this worker, at flush.
    pub vus_max: u32,
    /// Non-empty series.
    pub series: Vec<SeriesStats>,
    /// Non-empty scenarios.
    pub scenarios: Vec<ScenarioStats>,
    /// Non-empty named flows of weighted mixes (`scenario/flow`): iteration counts and
    /// durations per flow.
    pub flows: Vec<ScenarioStats>,
    /// Checks evaluated.
    pub checks: Vec<(String, CheckCounts)>,
    /// The worker's own CPU, run-queue wait and event-loop lag over the interval, so a
    /// saturated generator can be told from a slow target; `None` from the setup and
    /// teardown runner, which does not generate the load.
    pub generator: Option<GeneratorStats>,
    /// Requests by HTTP version and connections opened.
    pub protocols: crate::ProtocolCounts,
    /// A script's own metrics (k6's `k6/metrics`, `group_duration`) added.
    pub custom: Vec<crate::custom::CustomStats>,
}

/// Whether second `t` of the timeline (which covers `[t, t + 1)`) belongs to the
/// window `[start_s, end_s)`: when its middle `t + 0.5` does. One rule for every
/// window a run is cut into (stages, an event's before, during and after, scoped
/// thresholds, drift's holds), so that back-to-back windows split the timeline
/// without counting a second twice or leaving one out.
pub fn second_in_window(t: u32, start_s: f64, end_s: f64) -> bool {
    let mid = f64::from(t) + 0.5;
    mid >= start_s && mid < end_s
}

/// One second of the run, merged over all workers: a line of the timeline file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecondRecord {
    /// Second of the run.
    pub t: u32,
    /// Active VUs at the end of the second.
    pub vus: u32,
    /// Allocated VUs at the end of the second.
    pub vus_max: u32,
    /// Series, sorted by key.
    pub series: Vec<SeriesStats>,
    /// Scenarios, sorted by name.
    pub scenarios: Vec<ScenarioStats>,
    /// Named flows (`scenario/flow`), sorted by name.
    pub flows: Vec<ScenarioStats>,
    /// Checks by name.
    pub checks: BTreeMap<String, CheckCounts>,
    /// The load generator's own figures for this second (`None` in result
    /// directories written before pado measured itself, and in seconds no load
    /// worker reported).
    pub generator: Option<GeneratorSecond>,
    /// Requests by HTTP version and connections opened (empty in result directories
    /// written before pado counted them).
    pub protocols: crate::ProtocolCounts,
    /// A script's own metrics (k6's `k6/metrics`, `group_duration`), sorted by key.
    pub custom: Vec<crate::custom::CustomStats>,
}

impl SecondRecord {
    /// An empty second `t`.
    pub fn new(t: u32) -> Self {
        SecondRecord {
            t,
            ..Default::default()
        }
    }

    /// Fold one worker's interval in.
    pub fn absorb(&mut self, iv: Interval) {
        self.vus += iv.vus;
        self.vus_max += iv.vus_max;
        for s in iv.series {
            merge_series_into(&mut self.series, s);
        }
        for sc in iv.scenarios {
            merge_scenario_into(&mut self.scenarios, sc);
        }
        for f in iv.flows {
            merge_scenario_into(&mut self.flows, f);
        }
        for (name, c) in iv.checks {
            self.checks.entry(name).or_default().merge(&c);
        }
        if let Some(g) = &iv.generator {
            self.generator
                .get_or_insert_with(Default::default)
                .absorb(g);
        }
        self.protocols.merge(&iv.protocols);
        for c in &iv.custom {
            crate::custom::merge_custom_into(&mut self.custom, c);
        }
    }

    /// Add the same second of another generator: counters and histograms summed
    /// (exact), VUs summed. The generator's own figures are left alone: one
    /// generator's CPU share added to another's means nothing, so a merge keeps
    /// them per generator instead.
    pub fn merge(&mut self, o: SecondRecord) {
        self.vus = self.vus.saturating_add(o.vus);
        self.vus_max = self.vus_max.saturating_add(o.vus_max);
        for s in o.series {
            merge_series_into(&mut self.series, s);
        }
        for sc in o.scenarios {
            merge_scenario_into(&mut self.scenarios, sc);
        }
        for f in o.flows {
            merge_scenario_into(&mut self.flows, f);
        }
        for (name, c) in o.checks {
            self.checks.entry(name).or_default().merge(&c);
        }
        self.protocols.merge(&o.protocols);
        for c in &o.custom {
            crate::custom::merge_custom_into(&mut self.custom, c);
        }
    }

    /// Requests completed in this second over all series.
    pub fn requests(&self) -> u64 {
        self.series.iter().map(|s| s.requests).sum()
    }

    /// Failed requests in this second over all series.
    pub fn failed(&self) -> u64 {
        self.series.iter().map(|s| s.failed).sum()
    }

    /// All series of this second merged into one.
    pub fn overall(&self) -> SeriesStats {
        let mut all = SeriesStats::new(SeriesKey::named("all"));
        for s in &self.series {
            all.merge(s);
        }
        all
    }
}

fn merge_series_into(v: &mut Vec<SeriesStats>, s: SeriesStats) {
    match v.binary_search_by(|x| x.key.cmp(&s.key)) {
        Ok(i) => v[i].merge(&s),
        Err(i) => v.insert(i, s),
    }
}

fn merge_scenario_into(v: &mut Vec<ScenarioStats>, s: ScenarioStats) {
    match v.binary_search_by(|x| x.name.cmp(&s.name)) {
        Ok(i) => v[i].merge(&s),
        Err(i) => v.insert(i, s),
    }
}

/// The whole run summed: what the end-of-run summary and thresholds read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Seconds folded in.
    pub seconds: u32,
    /// Highest active VU count seen in any second.
    pub vus_peak: u32,
    /// Highest allocated VU count seen in any second.
    pub vus_max_peak: u32,
    /// Series, sorted by key.
    pub series: Vec<SeriesStats>,
    /// Scenarios, sorted by name.
    pub scenarios: Vec<ScenarioStats>,
    /// Named flows (`scenario/flow`), sorted by name.
    pub flows: Vec<ScenarioStats>,
    /// Checks by name.
    pub checks: BTreeMap<String, CheckCounts>,
    /// Samples of failed requests, at most [`crate::failure::SAMPLES_PER_KIND`] per
    /// (step, category), in the order the aggregator received them. Not part of the
    /// timeline: written once to `failures.jsonl`.
    pub failures: Vec<crate::FailureSample>,
    /// Requests by HTTP version and connections opened over the run (empty for
    /// result directories written before pado counted them).
    pub protocols: crate::ProtocolCounts,
    /// A script's own metrics over the run, sorted by key.
    pub custom: Vec<crate::custom::CustomStats>,
}

impl Totals {
    /// Fold one second in.
    pub fn add_second(&mut self, r: &SecondRecord) {
        self.seconds = self.seconds.max(r.t.saturating_add(1));
        self.vus_peak = self.vus_peak.max(r.vus);
        self.vus_max_peak = self.vus_max_peak.max(r.vus_max);
        for s in &r.series {
            merge_series_into(&mut self.series, s.clone());
        }
        for sc in &r.scenarios {
            merge_scenario_into(&mut self.scenarios, sc.clone());
        }
        for f in &r.flows {
            merge_scenario_into(&mut self.flows, f.clone());
        }
        for (name, c) in &r.checks {
            self.checks.entry(name.clone()).or_default().merge(c);
        }
        self.protocols.merge(&r.protocols);
        for c in &r.custom {
            crate::custom::merge_custom_into(&mut self.custom, c);
        }
    }

    /// All series merged into one.
    pub fn overall(&self) -> SeriesStats {
        let mut all = SeriesStats::new(SeriesKey::named("all"));
        for s in &self.series {
            all.merge(s);
        }
        all
    }

    /// All series with the given name (any tags) merged: a step's total.
    pub fn by_name(&self) -> BTreeMap<String, SeriesStats> {
        let mut m: BTreeMap<String, SeriesStats> = BTreeMap::new();
        for s in &self.series {
            m.entry(s.key.name.clone())
                .or_insert_with(|| SeriesStats::new(SeriesKey::named(s.key.name.clone())))
                .merge(s);
        }
        m
    }

    /// Scenarios merged into one (all iterations of the run).
    pub fn all_scenarios(&self) -> ScenarioStats {
        let mut all = ScenarioStats::new("all");
        for s in &self.scenarios {
            all.merge(s);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Phases;

    fn sample(status: u16, dur: u64) -> RequestSample {
        RequestSample {
            status,
            failed: status >= 400,
            phases: Phases {
                duration_us: dur,
                waiting_us: dur / 2,
                ..Default::default()
            },
            bytes_sent: 10,
            bytes_received: 100,
            ..Default::default()
        }
    }

    #[test]
    fn record_and_merge_are_exact() {
        let mut a = SeriesStats::new(SeriesKey::named("a"));
        let mut b = SeriesStats::new(SeriesKey::named("a"));
        for i in 0..100 {
            a.record(&sample(200, 1000 + i));
            b.record(&sample(if i % 10 == 0 { 500 } else { 200 }, 2000 + i));
        }
        b.record(&RequestSample {
            error: Some(ErrorKind::Reset),
            failed: true,
            ..Default::default()
        });
        a.merge(&b);
        assert_eq!(a.requests, 201);
        assert_eq!(a.failed, 11);
        assert_eq!(a.bytes_received, 20_000);
        assert_eq!(a.status_sorted()[&200], 190);
        assert_eq!(a.status_sorted()[&500], 10);
        let e = a.error_breakdown();
        assert_eq!(e["http_500"], 10);
        assert_eq!(e["reset"], 1);
        assert_eq!(a.phase(Phase::Duration).count(), 201);
    }

    #[test]
    fn a_request_never_sent_counts_as_failed_but_has_no_latency() {
        let mut a = SeriesStats::new(SeriesKey::named("a"));
        a.record(&sample(200, 5000));
        a.record(&RequestSample {
            error: Some(ErrorKind::Template),
            failed: true,
            ..Default::default()
        });
        assert_eq!((a.requests, a.failed), (2, 1));
        assert_eq!(a.error_breakdown()["template"], 1);
        assert_eq!(a.phase(Phase::Duration).count(), 1);
        assert_eq!(a.phase(Phase::Duration).min_us(), 5000);
    }

    #[test]
    fn an_expected_error_status_is_not_an_http_failure() {
        let mut a = SeriesStats::new(SeriesKey::named("a"));
        // Expected by a `status: 500` check: counted as a 500, not a failure.
        a.record(&RequestSample {
            status: 500,
            ..Default::default()
        });
        // Expected too, but another check failed it: `check_failed`, not `http_500`.
        a.record(&RequestSample {
            status: 500,
            failed: true,
            failed_by_check: true,
            ..Default::default()
        });
        a.record(&RequestSample {
            status: 500,
            failed: true,
            ..Default::default()
        });
        let mut b = SeriesStats::new(SeriesKey::named("a"));
        b.merge(&a);
        assert_eq!(b.status_sorted()[&500], 3);
        let e = b.error_breakdown();
        assert_eq!(e.get("http_500"), Some(&1), "{e:?}");
        assert_eq!(e.get("check_failed"), Some(&1), "{e:?}");
    }

    #[test]
    fn second_record_merges_workers_by_key() {
        let mut r = SecondRecord::new(3);
        for w in 0..2 {
            let mut s = SeriesStats::new(SeriesKey::named("x"));
            s.record(&sample(200, 10));
            let mut s2 = SeriesStats::new(SeriesKey::named("b"));
            s2.record(&sample(200, 10));
            r.absorb(Interval {
                worker: w,
                second: 3,
                vus: 5,
                vus_max: 6,
                series: vec![s, s2],
                scenarios: vec![ScenarioStats {
                    name: "s".into(),
                    iterations: 2,
                    ..Default::default()
                }],
                flows: vec![],
                custom: vec![],
                checks: vec![(
                    "ok".into(),
                    CheckCounts {
                        passes: 1,
                        fails: 1,
                    },
                )],
                generator: Some(GeneratorStats {
                    wall_ns: 1_000_000_000,
                    cpu_ns: 200_000_000 + 700_000_000 * w as u64,
                    wait_ns: Some(100_000_000),
                    ..Default::default()
                }),
                protocols: crate::ProtocolCounts {
                    requests_http1: 2,
                    conns_http1: 1,
                    ..Default::default()
                },
            });
        }
        let g = r.generator.unwrap();
        assert_eq!(g.workers, 2);
        assert_eq!(g.cpu_ns, 1_100_000_000);
        assert!((g.busy_max - 0.9).abs() < 1e-9, "{g:?}");
        assert_eq!(r.vus, 10);
        assert_eq!(r.series.len(), 2);
        assert_eq!(r.series[0].key.name, "b");
        assert_eq!(r.requests(), 4);
        assert_eq!(r.scenarios[0].iterations, 4);
        assert_eq!(r.checks["ok"].fails, 2);
        assert_eq!(
            (r.protocols.requests_http1, r.protocols.conns_http1),
            (4, 2)
        );
        let mut t = Totals::default();
        t.add_second(&r);
        t.add_second(&r);
        assert_eq!(t.overall().requests, 8);
        assert_eq!(
            (t.protocols.requests_http1, t.protocols.conns_http1),
            (8, 4)
        );
        assert_eq!(t.vus_peak, 10);
        assert_eq!(t.seconds, 4);
    }
}

//! One second of `timeline.jsonl` as it is written: histograms as base64 V2, the
//! generator's lag histogram sparse, zero counters left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use pado_metrics::series::Phase;
use pado_metrics::{
    CheckCounts, ErrorKind, GeneratorSecond, LagHistogram, LatencyHistogram, ProtocolCounts,
    ScenarioStats, SecondRecord, SeriesKey, SeriesStats, LAG_BUCKETS_US,
};

#[derive(Serialize, Deserialize)]
pub(super) struct WireSecond {
    pub(super) t: u32,
    pub(super) vus: u32,
    pub(super) vus_max: u32,
    #[serde(default)]
    pub(super) series: Vec<WireSeries>,
    #[serde(default)]
    pub(super) scenarios: Vec<WireScenario>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) flows: Vec<WireScenario>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) checks: BTreeMap<String, CheckCounts>,
    /// Absent in files written before pado measured itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) generator: Option<WireGenerator>,
    /// Requests by HTTP version and connections opened; absent when none (and in
    /// files written before pado counted them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) http: Option<WireHttp>,
    /// A script's own metrics; absent when none (and in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) custom: Vec<super::wire_custom::WireCustom>,
}

/// [`ProtocolCounts`] on the wire: `{"requests":{"1.1":n,"2":m},
/// "connections":{"1.1":a,"2":b},"connections_tls":c}`, zeros left out.
#[derive(Serialize, Deserialize)]
pub(super) struct WireHttp {
    #[serde(default)]
    requests: WireByVersion,
    #[serde(default)]
    connections: WireByVersion,
    #[serde(default, skip_serializing_if = "is_zero")]
    connections_tls: u64,
}

/// A count per HTTP version, by the version's name.
#[derive(Default, Serialize, Deserialize)]
struct WireByVersion {
    #[serde(rename = "1.1", default, skip_serializing_if = "is_zero")]
    http1: u64,
    #[serde(rename = "2", default, skip_serializing_if = "is_zero")]
    http2: u64,
}

impl WireHttp {
    /// `None` when nothing was counted, so the line stays as it was.
    pub(super) fn from_counts(c: &ProtocolCounts) -> Option<Self> {
        (!c.is_empty()).then_some(WireHttp {
            requests: WireByVersion {
                http1: c.requests_http1,
                http2: c.requests_http2,
            },
            connections: WireByVersion {
                http1: c.conns_http1,
                http2: c.conns_http2,
            },
            connections_tls: c.conns_tls,
        })
    }

    /// The counts, checked.
    pub(super) fn into_counts(self) -> Result<ProtocolCounts, String> {
        let c = ProtocolCounts {
            requests_http1: self.requests.http1,
            requests_http2: self.requests.http2,
            conns_http1: self.connections.http1,
            conns_http2: self.connections.http2,
            conns_tls: self.connections_tls,
        };
        c.check_consistent()?;
        Ok(c)
    }
}

/// [`GeneratorSecond`] on the wire: shares as numbers 0..=1, the lag histogram sparse
/// (bucket upper bound in µs -> samples; the open last bucket is `inf`).
#[derive(Serialize, Deserialize)]
pub(super) struct WireGenerator {
    pub(super) workers: u32,
    pub(super) wall_ns: u64,
    pub(super) span_ns: u64,
    pub(super) cpu_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) wait_ns: Option<u64>,
    pub(super) busy_max: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) wait_max: Option<f64>,
    lag_p99_us: u64,
    pub(super) lag_max_us: u64,
    #[serde(default)]
    pub(super) lag_hist: BTreeMap<String, u64>,
    /// pado's resident memory; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) rss_bytes: Option<u64>,
}

impl WireGenerator {
    pub(super) fn from_second(g: &GeneratorSecond) -> Self {
        let lag_hist = g
            .lag
            .counts
            .iter()
            .zip(LAG_BUCKETS_US)
            .filter(|(n, _)| **n > 0)
            .map(|(n, b)| {
                let key = if b == u64::MAX {
                    "inf".to_string()
                } else {
                    b.to_string()
                };
                (key, *n)
            })
            .collect();
        WireGenerator {
            workers: g.workers,
            wall_ns: g.wall_ns,
            span_ns: g.span_ns,
            cpu_ns: g.cpu_ns,
            wait_ns: g.wait_ns,
            busy_max: g.busy_max,
            wait_max: g.wait_max,
            lag_p99_us: g.lag_p99_us,
            lag_max_us: g.lag.max_us,
            lag_hist,
            rss_bytes: g.rss_bytes,
        }
    }

    pub(super) fn into_second(self) -> Result<GeneratorSecond, String> {
        let mut lag = LagHistogram {
            max_us: self.lag_max_us,
            ..Default::default()
        };
        for (bound, n) in self.lag_hist {
            let b = if bound == "inf" {
                u64::MAX
            } else {
                bound
                    .parse()
                    .map_err(|_| format!("lag bucket `{bound}` is not a number"))?
            };
            let i = LagHistogram::bucket_of_bound(b)
                .ok_or_else(|| format!("lag bucket `{bound}` is not one of pado's bounds"))?;
            lag.counts[i] += n;
        }
        Ok(GeneratorSecond {
            workers: self.workers,
            wall_ns: self.wall_ns,
            span_ns: self.span_ns,
            cpu_ns: self.cpu_ns,
            wait_ns: self.wait_ns,
            busy_max: self.busy_max,
            wait_max: self.wait_max,
            lag_p99_us: self.lag_p99_us,
            lag,
            rss_bytes: self.rss_bytes,
        })
    }
}

#[derive(Serialize, Deserialize)]
pub(super) struct WireSeries {
    #[serde(flatten)]
    pub(super) key: SeriesKey,
    pub(super) requests: u64,
    pub(super) failed: u64,
    #[serde(default)]
    pub(super) check_failed: u64,
    pub(super) bytes_sent: u64,
    pub(super) bytes_received: u64,
    /// Absent when 0 (and in files written before it existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) reconnects: u64,
    /// Absent when 0 (and in files written before it existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) body_cut: u64,
    /// `grpc:` steps' server streams ended; absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) grpc_streams: u64,
    /// Messages received on them; absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) grpc_stream_msgs: u64,
    /// Messages sent on streams; absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) grpc_stream_msgs_sent: u64,
    /// Absent when 0 (and in files written before it existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) bytes_encoded: u64,
    /// Absent when 0 (and in files written before it existed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) bytes_decoded: u64,
    #[serde(default)]
    pub(super) status: BTreeMap<String, u64>,
    /// Statuses of 400 or more the step expected; absent when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) expected_status: BTreeMap<String, u64>,
    #[serde(default)]
    pub(super) errors: BTreeMap<String, u64>,
    #[serde(default)]
    pub(super) hist: BTreeMap<String, String>,
    /// The step's WebSocket sessions; absent for HTTP steps (and in files written
    /// before pado spoke WebSocket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ws: Option<WireWs>,
    /// The step's event streams and LLM figures; absent for other steps (and in
    /// files written before pado read event streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sse: Option<WireSse>,
}

/// [`pado_metrics::SseStats`] on the wire: counters, and the histograms by name
/// (`ttft`, `itl`, `tpot`, `output_tokens`, `tokens_per_s`), each absent when empty.
#[derive(Serialize, Deserialize)]
pub(super) struct WireSse {
    pub(super) streams: u64,
    pub(super) events: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) llm_streams: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) tokens: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) hist: BTreeMap<String, String>,
}

impl WireSse {
    pub(super) fn from_stats(e: &pado_metrics::SseStats) -> Result<Self, String> {
        let mut hist = BTreeMap::new();
        for (name, h) in e.hists() {
            if !h.is_empty() {
                hist.insert(name.to_string(), h.encode()?);
            }
        }
        Ok(WireSse {
            streams: e.streams,
            events: e.events,
            llm_streams: e.llm_streams,
            tokens: e.tokens,
            hist,
        })
    }

    pub(super) fn into_stats(self) -> Result<pado_metrics::SseStats, String> {
        let mut e = pado_metrics::SseStats {
            streams: self.streams,
            events: self.events,
            llm_streams: self.llm_streams,
            tokens: self.tokens,
            ..Default::default()
        };
        let names = e.hists().map(|(n, _)| n);
        for (name, enc) in self.hist {
            let i = names
                .iter()
                .position(|n| *n == name)
                .ok_or_else(|| format!("unknown event-stream histogram `{name}`"))?;
            *e.hists_mut()[i] = LatencyHistogram::decode(&enc)?;
        }
        Ok(e)
    }
}

/// [`pado_metrics::WsStats`] on the wire: counters, failures by category, and the three
/// histograms by name (`connecting`, `session_duration`, `msg_latency`), each
/// absent when empty.
#[derive(Serialize, Deserialize)]
pub(super) struct WireWs {
    pub(super) sessions: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) failed: u64,
    pub(super) msgs_sent: u64,
    pub(super) msgs_received: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) errors: BTreeMap<String, u64>,
    #[serde(default)]
    pub(super) hist: BTreeMap<String, String>,
}

/// The names of [`WireWs::hist`]'s histograms.
const WS_HISTS: [&str; 3] = ["connecting", "session_duration", "msg_latency"];

impl WireWs {
    pub(super) fn from_stats(w: &pado_metrics::WsStats) -> Result<Self, String> {
        let mut hist = BTreeMap::new();
        for (name, h) in WS_HISTS
            .into_iter()
            .zip([&w.connecting, &w.session, &w.msg_latency])
        {
            if !h.is_empty() {
                hist.insert(name.to_string(), h.encode()?);
            }
        }
        Ok(WireWs {
            sessions: w.sessions,
            failed: w.failed,
            msgs_sent: w.msgs_sent,
            msgs_received: w.msgs_received,
            errors: w.errors.iter().cloned().collect(),
            hist,
        })
    }

    pub(super) fn into_stats(self) -> Result<pado_metrics::WsStats, String> {
        let mut w = pado_metrics::WsStats {
            sessions: self.sessions,
            failed: self.failed,
            msgs_sent: self.msgs_sent,
            msgs_received: self.msgs_received,
            errors: self.errors.into_iter().collect(),
            ..Default::default()
        };
        for (name, enc) in self.hist {
            let h = match name.as_str() {
                "connecting" => &mut w.connecting,
                "session_duration" => &mut w.session,
                "msg_latency" => &mut w.msg_latency,
                _ => return Err(format!("unknown WebSocket histogram `{name}`")),
            };
            *h = LatencyHistogram::decode(&enc)?;
        }
        Ok(w)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize, Deserialize)]
pub(super) struct WireScenario {
    pub(super) name: String,
    pub(super) iterations: u64,
    #[serde(default)]
    pub(super) interrupted: u64,
    #[serde(default)]
    pub(super) dropped: u64,
    #[serde(default)]
    pub(super) late: u64,
    /// Open model: arrivals that started an iteration (left out at zero, so a
    /// closed model's lines are as they were).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) started: u64,
    #[serde(default)]
    pub(super) iteration_duration: String,
}

/// One line of `timeline.jsonl` as a second: what a coordinator reads from a
/// generator's live feed (the same text the generator writes to its file).
pub fn parse_timeline_line(line: &str) -> Result<SecondRecord, String> {
    let wire: WireSecond = serde_json::from_str(line.trim_end()).map_err(|e| e.to_string())?;
    wire.into_record()
}

/// A second as one line of `timeline.jsonl` (without the line end), as a run
/// writes it.
pub fn timeline_line(rec: &SecondRecord) -> Result<String, String> {
    let wire = WireSecond::from_record(rec)?;
    serde_json::to_string(&wire).map_err(|e| e.to_string())
}

impl WireSecond {
    pub(super) fn from_record(r: &SecondRecord) -> Result<Self, String> {
        Ok(WireSecond {
            t: r.t,
            vus: r.vus,
            vus_max: r.vus_max,
            series: r
                .series
                .iter()
                .map(WireSeries::from_stats)
                .collect::<Result<_, _>>()?,
            scenarios: r
                .scenarios
                .iter()
                .map(WireScenario::from_stats)
                .collect::<Result<_, _>>()?,
            flows: r
                .flows
                .iter()
                .map(WireScenario::from_stats)
                .collect::<Result<_, _>>()?,
            checks: r.checks.clone(),
            generator: r.generator.as_ref().map(WireGenerator::from_second),
            http: WireHttp::from_counts(&r.protocols),
            custom: super::wire_custom::to_wire(&r.custom)?,
        })
    }

    pub(super) fn into_record(self) -> Result<SecondRecord, String> {
        let mut series = Vec::with_capacity(self.series.len());
        for s in self.series {
            series.push(s.into_stats()?);
        }
        series.sort_by(|a, b| a.key.cmp(&b.key));
        let decode = |v: Vec<WireScenario>| -> Result<Vec<ScenarioStats>, String> {
            let mut out = v
                .into_iter()
                .map(WireScenario::into_stats)
                .collect::<Result<Vec<_>, _>>()?;
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        };
        let scenarios = decode(self.scenarios)?;
        let flows = decode(self.flows)?;
        let generator = self.generator.map(WireGenerator::into_second).transpose()?;
        let protocols = self
            .http
            .map(WireHttp::into_counts)
            .transpose()?
            .unwrap_or_default();
        Ok(SecondRecord {
            t: self.t,
            vus: self.vus,
            vus_max: self.vus_max,
            series,
            scenarios,
            flows,
            checks: self.checks,
            generator,
            protocols,
            custom: super::wire_custom::from_wire(self.custom)?,
        })
    }
}

impl WireScenario {
    pub(super) fn from_stats(s: &ScenarioStats) -> Result<Self, String> {
        Ok(WireScenario {
            name: s.name.clone(),
            iterations: s.iterations,
            interrupted: s.interrupted,
            dropped: s.dropped,
            late: s.late,
            started: s.started,
            iteration_duration: s.iteration_duration.encode()?,
        })
    }

    pub(super) fn into_stats(self) -> Result<ScenarioStats, String> {
        Ok(ScenarioStats {
            name: self.name,
            iterations: self.iterations,
            interrupted: self.interrupted,
            dropped: self.dropped,
            late: self.late,
            started: self.started,
            iteration_duration: LatencyHistogram::decode(&self.iteration_duration)?,
        })
    }
}

impl WireSeries {
    pub(super) fn from_stats(s: &SeriesStats) -> Result<Self, String> {
        let mut errors = BTreeMap::new();
        for k in ErrorKind::ALL {
            let n = s.errors[k.index()];
            if n > 0 {
                errors.insert(k.as_str().to_string(), n);
            }
        }
        let mut hist = BTreeMap::new();
        for p in Phase::ALL {
            let h = s.phase(p);
            if !h.is_empty() {
                hist.insert(p.as_str().to_string(), h.encode()?);
            }
        }
        Ok(WireSeries {
            key: s.key.clone(),
            requests: s.requests,
            failed: s.failed,
            check_failed: s.check_failed,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            reconnects: s.reconnects,
            body_cut: s.body_cut,
            grpc_streams: s.grpc_streams,
            grpc_stream_msgs: s.grpc_stream_msgs,
            grpc_stream_msgs_sent: s.grpc_stream_msgs_sent,
            bytes_encoded: s.bytes_encoded,
            bytes_decoded: s.bytes_decoded,
            status: s
                .status_sorted()
                .into_iter()
                .map(|(c, n)| (c.to_string(), n))
                .collect(),
            expected_status: s
                .expected_status
                .iter()
                .map(|(c, n)| (c.to_string(), *n))
                .collect(),
            errors,
            hist,
            ws: s.ws.as_deref().map(WireWs::from_stats).transpose()?,
            sse: s.sse.as_deref().map(WireSse::from_stats).transpose()?,
        })
    }

    pub(super) fn into_stats(mut self) -> Result<SeriesStats, String> {
        let hist = std::mem::take(&mut self.hist);
        let mut s = SeriesStats::default();
        self.counters_into(&mut s)?;
        for (name, enc) in hist {
            let p = Phase::ALL
                .into_iter()
                .find(|p| p.as_str() == name)
                .ok_or_else(|| format!("unknown histogram `{name}`"))?;
            s.hist[p as usize] = LatencyHistogram::decode(&enc)?;
        }
        Ok(s)
    }

    /// Everything but the histograms (left as they are) into `s`, checked: counters
    /// replaced, not added.
    pub(super) fn counters_into(self, s: &mut SeriesStats) -> Result<(), String> {
        s.key = self.key;
        s.status.clear();
        s.expected_status.clear();
        s.errors = Default::default();
        s.requests = self.requests;
        s.failed = self.failed;
        s.check_failed = self.check_failed;
        s.bytes_sent = self.bytes_sent;
        s.bytes_received = self.bytes_received;
        s.reconnects = self.reconnects;
        s.body_cut = self.body_cut;
        s.grpc_streams = self.grpc_streams;
        s.grpc_stream_msgs = self.grpc_stream_msgs;
        s.grpc_stream_msgs_sent = self.grpc_stream_msgs_sent;
        s.bytes_encoded = self.bytes_encoded;
        s.bytes_decoded = self.bytes_decoded;
        s.ws = self.ws.map(WireWs::into_stats).transpose()?.map(Box::new);
        s.sse = self.sse.map(WireSse::into_stats).transpose()?.map(Box::new);
        for (code, n) in self.status {
            let c: u16 = code
                .parse()
                .map_err(|_| format!("status `{code}` is not a number"))?;
            s.bump_status(c, n);
        }
        for (code, n) in self.expected_status {
            let c: u16 = code
                .parse()
                .map_err(|_| format!("expected status `{code}` is not a number"))?;
            s.bump_expected(c, n);
        }
        for (name, n) in self.errors {
            let k = ErrorKind::ALL
                .into_iter()
                .find(|k| k.as_str() == name)
                .ok_or_else(|| format!("unknown error kind `{name}`"))?;
            s.errors[k.index()] += n;
        }
        s.check_consistent()
    }
}

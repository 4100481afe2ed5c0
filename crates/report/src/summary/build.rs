//! Computing the summary of a loaded run: totals, per step and tag, checks,
//! thresholds, then the analyses and the sentences built on them.

use std::collections::BTreeMap;

use pado_analysis::thresholds::{self, Threshold, ThresholdResult};
use pado_analysis::verdict::Verdict;
use pado_analysis::TotalsSource;
use pado_metrics::{HttpVersion, Phase, ProtocolCounts, SeriesStats, Totals};
use pado_results::{RunMeta, ThresholdSpec};

use super::analyses::{bottlenecks_of, drift_periods, generator_check, saturation_of, soak_of};
use super::verdict::verdict;
use super::warnings::warnings;
use super::{
    CheckSummary, FlowSummary, LoadedRun, ReportError, StepSummary, Summary, WsSummary,
    GENERATOR_DELAYED, GENERATOR_SATURATED,
};

/// Build the summary of a loaded run.
pub fn build(run: &LoadedRun) -> Result<Summary, ReportError> {
    let meta = &run.meta;
    let totals = &run.totals;
    let dur = meta.duration_s.max(1e-9);
    super::custom::declare(totals);
    let results = threshold_results(run, dur)?;
    let any_open = meta.scenarios.iter().any(|s| s.open_model);
    let (periods, drifts) = drift_periods(run);
    let (soak, soak_ok) = soak_of(run, &periods, &drifts);
    let mut summary = Summary {
        name: meta.name.clone(),
        started_at: meta.started_at.clone(),
        duration_s: meta.duration_s,
        latency_origin: latency_origin(meta).to_string(),
        vus: totals.vus_peak,
        vus_max: totals.vus_max_peak,
        stages: run.stages.clone(),
        stability: crate::stability::stability(&run.points, meta.duration_s),
        drift_periods: drifts,
        soak,
        soak_mode: meta.soak,
        soak_ok,
        planned_s: meta.planned_s,
        in_progress: run.in_progress,
        generator: generator_check(run, any_open),
        custom: super::custom::custom_of(totals, dur),
        thresholds_ok: results.iter().all(|r| r.ok),
        thresholds: results,
        events_ok: run.events.iter().all(|e| e.ok()),
        events: run.events.clone(),
        interrupted: meta.interrupted,
        scenarios: meta.scenarios.clone(),
        warnings: warnings(run),
        failures: totals.failures.clone(),
        outputs: meta.outputs.clone(),
        raw_output: meta.raw_output.clone(),
        ..Summary::default()
    };
    request_figures(&mut summary, totals, dur);
    iteration_figures(&mut summary, totals);
    summary.drift = pado_analysis::drift::headline(&summary.drift_periods).cloned();
    let drift_measured = !summary.drift_periods.is_empty()
        || summary.soak.as_ref().is_some_and(|k| !k.latency.is_empty());
    summary.drift_method = drift_measured.then(|| pado_analysis::drift::METHOD.to_string());
    let generator_saturated = summary.generator.as_ref().is_some_and(|g| g.saturated);
    if !generator_saturated {
        // A pado that capped the load it sends would show its own knee. A pado that
        // was only delayed (a shared machine) delivered the load: the target's
        // analysis stands, with the delay said beside it.
        summary.saturation = saturation_of(run);
    }
    summary.bottlenecks =
        bottlenecks_of(run, summary.saturation.as_ref(), summary.generator.as_ref());
    let scripted = !meta.scenarios.is_empty() && meta.scenarios.iter().all(|s| s.scripted);
    summary.judged = judge(&summary, scripted);
    summary.verdict = verdict(&summary);
    summary.generators = super::generators::breakdown(run);
    summary.partial = run
        .generators
        .as_ref()
        .map(|g| g.partial.clone())
        .unwrap_or_default();
    for g in &summary.generators {
        if let Some(c) = g.self_check.as_ref().filter(|c| c.saturated) {
            let loud = format!(
                "{GENERATOR_SATURATED}: generator {}: {}",
                g.segment, c.message
            );
            summary.verdict.insert(0, loud);
        }
    }
    if let Some(g) = summary.generator.as_ref().filter(|g| g.delayed) {
        // Not loud: the load went out and the analysis stands, but every latency
        // may be longer by up to pado's scheduling delay.
        summary
            .verdict
            .push(format!("{GENERATOR_DELAYED}: {}", g.message));
    }
    if let Some(g) = summary.generator.as_ref().filter(|g| g.saturated) {
        // First and loud, and only here (the terminal shows it on top, the HTML report
        // in a banner): every other figure of the run is suspect.
        let loud = format!("{GENERATOR_SATURATED}: {}", g.message);
        summary.verdict.insert(0, loud);
    }
    Ok(summary)
}

/// A threshold stored in run.json, parsed, with the window a scoped one was placed
/// on when the run started (a window scope reads its own; an older file's stage
/// scope has none, and then no data).
pub fn parse_spec(spec: &ThresholdSpec) -> Result<Threshold, ReportError> {
    let mut th =
        thresholds::parse_object(&spec.metric, &spec.expr, spec.abort_on_fail).map_err(|e| {
            ReportError::Threshold {
                metric: spec.metric.clone(),
                expr: spec.expr.clone(),
                message: e.to_string(),
            }
        })?;
    if let (Some(scope), Some([a, b])) = (th.scope.as_mut(), spec.window_s) {
        scope.window_s = Some((a, b));
    }
    Ok(th)
}

/// The thresholds stored in run.json, parsed and evaluated: on the totals, or for a
/// scoped one on its window's seconds (judged as the timeline was read).
fn threshold_results(run: &LoadedRun, dur: f64) -> Result<Vec<ThresholdResult>, ReportError> {
    let meta = &run.meta;
    let whole = TotalsSource::new(&run.totals, dur).with_steps(&meta.steps);
    let mut out = Vec::new();
    for (i, spec) in meta.thresholds.iter().enumerate() {
        let th = parse_spec(spec)?;
        out.push(match run.scoped.iter().find(|(j, _)| *j == i) {
            Some((_, r)) => r.clone(),
            None if th.scope.is_some() => {
                pado_analysis::scoped::WindowFold::default().evaluate(&th, &meta.steps)
            }
            None => thresholds::evaluate_one(&th, &whole),
        });
    }
    Ok(out)
}

/// The run's one verdict, from what the summary computed.
fn judge(s: &Summary, scripted: bool) -> Verdict {
    use pado_analysis::verdict::{Judging, RequestCounts, SoakJudging};
    let (passes, fails) = s
        .checks
        .values()
        .fold((0, 0), |(p, f), c| (p + c.passes, f + c.fails));
    let ws = s.websocket.as_ref();
    let mut errors: Vec<(String, u64)> = s.errors.iter().map(|(k, n)| (k.clone(), *n)).collect();
    if let Some(w) = ws {
        errors.extend(w.errors.iter().map(|(k, n)| (k.clone(), *n)));
    }
    let top_error = errors.into_iter().max_by_key(|(_, n)| *n);
    Verdict::judge(&Judging {
        thresholds: &s.thresholds,
        events: &s.events,
        soak: (s.soak_mode == Some(pado_results::SoakMode::Requested)).then_some(SoakJudging {
            soak: s.soak.as_ref(),
            ok: s.soak_ok,
        }),
        checks: (passes, fails),
        requests: RequestCounts {
            completed: s.requests + ws.map_or(0, |w| w.sessions),
            failed: s.failed + ws.map_or(0, |w| w.failed),
            top_error,
        },
        in_progress: s.in_progress,
        scripted,
    })
}

/// How latency was timed, by the scenarios' models.
fn latency_origin(meta: &RunMeta) -> &'static str {
    let any_open = meta.scenarios.iter().any(|s| s.open_model);
    let any_closed = meta.scenarios.iter().any(|s| !s.open_model);
    match (any_open, any_closed) {
        (true, false) => "open model: from each iteration's scheduled start (first request), so a stalled target or a behind-schedule generator shows in the percentiles (no coordinated omission)",
        (false, _) => "closed model: from just before the request is written to the last response byte (as k6 and wrk); connection setup is reported separately",
        (true, true) => "mixed: open-model scenarios from the scheduled start, closed-model scenarios from the request write",
    }
}

/// One step's (or tagged series') figures.
fn step_summary(s: &SeriesStats, dur: f64) -> StepSummary {
    StepSummary {
        requests: s.requests,
        failed: s.failed,
        rps: s.requests as f64 / dur,
        errors: s.error_breakdown(),
        latency_ms: s.phase(Phase::Duration).summary(),
        waiting_ms: s.phase(Phase::Waiting).summary(),
        ws: s.ws.as_deref().map(|w| ws_summary(w, dur)),
        grpc: grpc_summary(s),
        sse: s.sse.as_deref().map(|e| sse_summary(e, dur)),
    }
}

/// Event-stream and LLM figures of a step (or of all of them).
fn sse_summary(e: &pado_metrics::SseStats, dur: f64) -> super::SseSummary {
    super::SseSummary {
        streams: e.streams,
        events: e.events,
        llm: (e.llm_streams > 0).then(|| super::LlmSummary {
            requests: e.llm_streams,
            output_tokens: e.tokens,
            output_tokens_per_s: e.tokens as f64 / dur,
            ttft_ms: e.ttft.summary(),
            itl_ms: e.itl.summary(),
            tpot_ms: e.tpot.summary(),
            // Both hold thousandths: their summaries read in tokens and tokens/s.
            output_tokens_per_request: e.output_tokens.summary(),
            tokens_per_s_per_request: e.tokens_per_s.summary(),
            input_tokens_per_request: (!e.input_tokens.is_empty())
                .then(|| e.input_tokens.summary()),
        }),
    }
}

/// A `grpc:` step's figures: a series whose statuses are gRPC codes (below 100,
/// which no HTTP response has), that ended streams, or failed with a gRPC status.
fn grpc_summary(s: &SeriesStats) -> Option<super::GrpcSummary> {
    s.is_grpc().then(|| super::GrpcSummary {
        status: s
            .status
            .iter()
            .filter(|&&(c, _)| c < 100)
            .map(|&(c, n)| (c.to_string(), n))
            .collect(),
        streams: s.grpc_streams,
        stream_msgs: s.grpc_stream_msgs,
        stream_msgs_sent: s.grpc_stream_msgs_sent,
    })
}

/// WebSocket figures of a step (or of all of them).
fn ws_summary(w: &pado_metrics::WsStats, dur: f64) -> WsSummary {
    WsSummary {
        sessions: w.sessions,
        failed: w.failed,
        msgs_sent: w.msgs_sent,
        msgs_received: w.msgs_received,
        msgs_sent_per_s: w.msgs_sent as f64 / dur,
        msgs_received_per_s: w.msgs_received as f64 / dur,
        errors: w.errors.iter().cloned().collect(),
        connecting_ms: w.connecting.summary(),
        session_duration_ms: w.session.summary(),
        msg_latency_ms: w.msg_latency.summary(),
        msg_latency_count: w.msg_latency.count(),
    }
}

/// Requests by HTTP version and connections opened; nothing for a result directory
/// written before pado counted them (unknown is not zero).
fn protocol_figures(summary: &mut Summary, p: &ProtocolCounts) {
    if p.is_empty() {
        return;
    }
    let by_version = |n: &dyn Fn(HttpVersion) -> u64| -> BTreeMap<String, u64> {
        [HttpVersion::Http1, HttpVersion::Http2]
            .into_iter()
            .filter(|v| n(*v) > 0)
            .map(|v| (v.as_str().to_string(), n(v)))
            .collect()
    };
    summary.http_versions = by_version(&|v| p.requests(v));
    summary.connections_by_version = by_version(&|v| p.conns(v));
    summary.connections_opened = Some(p.connections());
    summary.connections_tls = p.conns_tls;
}

/// Requests: counts, rates, statuses, latency and its phases, data, per step and
/// per tag set.
fn request_figures(summary: &mut Summary, totals: &Totals, dur: f64) {
    let all = totals.overall();
    summary.requests = all.requests;
    summary.failed = all.failed;
    summary.failed_rate = pado_base::units::share(all.failed, all.requests);
    summary.rps = all.requests as f64 / dur;
    summary.errors = all.error_breakdown();
    summary.reconnects = all.reconnects;
    protocol_figures(summary, &totals.protocols);
    summary.status = all
        .status_sorted()
        .into_iter()
        .map(|(c, n)| (c.to_string(), n))
        .collect();
    summary.latency_ms = all.phase(Phase::Duration).summary();
    summary.phases_ms = Phase::ALL
        .into_iter()
        .filter(|p| *p != Phase::Duration)
        // `http_req_dns` is absent from result directories written before pado timed
        // it: no data, not a phase of zeros.
        .filter(|p| *p != Phase::Dns || !all.phase(*p).is_empty())
        .map(|p| (p.metric_name().to_string(), all.phase(p).summary()))
        .collect();
    summary.websocket = all.ws.as_deref().map(|w| ws_summary(w, dur));
    summary.sse = all.sse.as_deref().map(|e| sse_summary(e, dur));
    summary.data_sent = all.bytes_sent;
    summary.data_received = all.bytes_received;
    summary.data_received_encoded = all.bytes_encoded;
    summary.data_received_decoded = all.bytes_decoded;
    summary.steps = totals
        .by_name()
        .into_iter()
        .map(|(name, s)| (name, step_summary(&s, dur)))
        .collect();
    let mut tagged = BTreeMap::new();
    for s in totals.series.iter().filter(|s| !s.key.tags.is_empty()) {
        let tags: Vec<String> = s.key.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        tagged.insert(
            format!("{}{{{}}}", s.key.name, tags.join(",")),
            step_summary(s, dur),
        );
    }
    summary.tagged = tagged;
    summary.checks = totals
        .checks
        .iter()
        .map(|(k, c)| {
            let c = CheckSummary {
                passes: c.passes,
                fails: c.fails,
            };
            (k.clone(), c)
        })
        .collect();
}

/// Iterations: completed, interrupted, dropped, late, and their duration per flow.
fn iteration_figures(summary: &mut Summary, totals: &Totals) {
    let sc = totals.all_scenarios();
    summary.iterations = sc.iterations;
    summary.iterations_interrupted = sc.interrupted;
    summary.dropped_iterations = sc.dropped;
    summary.late_iterations = sc.late;
    summary.iteration_duration_ms = sc.iteration_duration.summary();
    summary.flows = totals
        .flows
        .iter()
        .map(|f| {
            let flow = FlowSummary {
                iterations: f.iterations,
                iteration_duration_ms: f.iteration_duration.summary(),
            };
            (f.name.clone(), flow)
        })
        .collect();
}

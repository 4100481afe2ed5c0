//! `GET /api/run` and `GET /api/state`: the run's static facts, and what it is
//! doing now (the handle's state, the store's verdicts, the generators, and once
//! ended the summary and the files).

use serde_json::{json, Value};

use crate::server::Shared;

/// `/api/run`; `control` says whether this caller presented the token.
pub(crate) fn run_json(s: &Shared, control: bool) -> Value {
    let i = &s.info;
    // A result directory pado named itself is known once the run has ended.
    let run_id = i.run_id.clone().or_else(|| {
        let end = pado_base::lock(&s.end);
        let dir = &end.as_ref()?.dir;
        Some(dir.file_name()?.to_string_lossy().into_owned())
    });
    json!({
        "name": i.name,
        "run_id": run_id,
        "started_at": s.started_at,
        "scenarios": i.scenarios,
        "stages": i.stages,
        "thresholds": i.threshold_infos(),
        "steps": i.steps,
        "planned_s": i.planned_s,
        "distributed": i.distributed,
        "control": control,
        "baseline": s.baseline.as_ref().map(|b| json!({"label": b.label, "run_id": b.run_id})),
    })
}

/// `/api/state`.
pub(crate) fn state_json(s: &Shared) -> Value {
    let st = s.run.state();
    let generators: Vec<Value> = s
        .run
        .generators()
        .into_iter()
        .map(|g| {
            json!({
                "name": g.name,
                "segment": g.segment,
                "requests": g.requests,
                "cpu_pct": g.cpu_pct,
                "reporting": g.reporting,
            })
        })
        .collect();
    let (thresholds, failures, events, seconds_kept) = {
        let store = pado_base::lock(&s.store);
        (
            serde_json::to_value(store.thresholds()).unwrap_or(Value::Null),
            serde_json::to_value(store.failures()).unwrap_or(Value::Null),
            serde_json::to_value(store.events()).unwrap_or(Value::Null),
            store.len(),
        )
    };
    let hint = pado_base::lock(&s.hint).clone();
    let end = pado_base::lock(&s.end);
    let files: Vec<Value> = end
        .as_ref()
        .map(|e| {
            e.files
                .iter()
                .map(|f| json!({"name": f, "url": format!("/files/{f}")}))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "elapsed_s": st.elapsed.as_secs_f64(),
        // Holds and skips move the plan's end: the page's time axis follows it.
        "planned_end_s": st.planned_end.as_secs_f64(),
        "seconds_closed": st.seconds_closed,
        "seconds_kept": seconds_kept,
        "stage": st.stage,
        "active_vus": st.active_vus,
        "vu_cap": st.vu_cap,
        "rate_factor": st.rate_factor,
        "paused": st.paused,
        "stopping": st.stopping,
        "abort_reason": st.abort_reason,
        "ended": st.ended || end.is_some(),
        "thresholds": thresholds,
        "failures": failures,
        // Once the run has ended, the report's table names the limit
        // (summary.json's `bottlenecks`); while it goes, the live hint's limit.
        "bottleneck": match end.as_ref() {
            Some(e) => e
                .summary
                .get("bottlenecks")
                .and_then(|b| b.get("limit"))
                .cloned()
                .unwrap_or(Value::Null),
            None => hint
                .as_ref()
                .and_then(|(h, _)| h.component.as_ref())
                .map(|c| Value::String(format!("{} ({})", c.component, c.endpoint)))
                .unwrap_or(Value::Null),
        },
        "bottleneck_hint": hint.as_ref().map(|(h, last)| {
            let mut v = serde_json::to_value(h).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("final".into(), Value::Bool(*last));
            }
            v
        }),
        "events": events,
        "generators": generators,
        "summary": end.as_ref().map(|e| e.summary.clone()),
        "files": files,
    })
}

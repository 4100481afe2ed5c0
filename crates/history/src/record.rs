//! What one run's row holds, read from its result directory (`run.json`,
//! `summary.json`: see docs/result-format.md), so every way a result comes to be (a
//! run, a find-capacity step, a merge, `pado history rebuild`) records the same.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pado_report::compare::EarlierLlm;
use pado_results::result_dir::{RUN_FILE, SUMMARY_FILE};
use pado_results::summary::SummaryFigures;
use pado_results::RunView;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::HistoryError;

/// How the result came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `pado run` (one generator, the whole test).
    Run,
    /// One step of `pado find-capacity`.
    CapacityStep,
    /// A merged distributed run (`pado merge`, `pado run --generators`, `pado k8s run`).
    Merge,
}

impl Kind {
    /// The word stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::CapacityStep => "capacity-step",
            Kind::Merge => "merge",
        }
    }

    /// The kind a stored word names (`run` for anything unknown).
    pub fn parse(s: &str) -> Kind {
        match s {
            "capacity-step" => Kind::CapacityStep,
            "merge" => Kind::Merge,
            _ => Kind::Run,
        }
    }
}

/// One step's key figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepFigures {
    /// Step name.
    pub step: String,
    /// Requests completed.
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// Requests per second over the run.
    pub rps: f64,
    /// Failed / requests (0 without requests).
    pub failed_rate: f64,
    /// Latency percentiles in ms (`None` when nothing was timed).
    pub p50_ms: Option<f64>,
    /// 95th percentile, ms.
    pub p95_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// The step's LLM figures (`sse: {llm: true}` steps only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmRecord>,
}

/// The LLM figures of a run or a step, as `pado trend` follows them: time to first
/// token, inter-token latency and time per output token percentiles (ms) and the
/// tokens per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LlmRecord {
    /// The percentiles and tokens per second, as compare's noise floor reads them.
    #[serde(flatten)]
    pub figures: EarlierLlm,
    /// Output tokens, all streams.
    pub output_tokens: u64,
}

impl LlmRecord {
    /// The record of a summary's LLM figures; `None` without LLM streams.
    fn of(sse: Option<&pado_results::summary::SseFigures>) -> Option<LlmRecord> {
        let l = sse?.llm.as_ref()?;
        Some(LlmRecord {
            figures: EarlierLlm {
                ttft_p50_ms: finite(l.ttft_ms.p50),
                ttft_p95_ms: finite(l.ttft_ms.p95),
                ttft_p99_ms: finite(l.ttft_ms.p99),
                itl_p50_ms: finite(l.itl_ms.p50),
                itl_p95_ms: finite(l.itl_ms.p95),
                itl_p99_ms: finite(l.itl_ms.p99),
                tpot_p50_ms: finite(l.tpot_ms.p50),
                tpot_p95_ms: finite(l.tpot_ms.p95),
                tokens_per_s: finite(l.output_tokens_per_s),
                tokens_per_s_per_request_p50: finite(l.tokens_per_s_per_request.p50),
            },
            output_tokens: l.output_tokens,
        })
    }
}

/// Everything recorded about one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRecord {
    /// The test's name.
    pub name: String,
    /// How the result came to be.
    pub kind: Kind,
    /// Start (second 0), RFC 3339 UTC as in run.json.
    pub started_at: String,
    /// The same instant in ms since the Unix epoch, for ordering and `--since`.
    pub started_unix_ms: i64,
    /// Wall-clock length in seconds.
    pub duration_s: f64,
    /// The run's `plan_id` when it has one (a split test), else the SHA-256 of the
    /// scenarios, stages and thresholds recorded in run.json: equal hashes are the
    /// same test.
    pub scenario_hash: String,
    /// Requests completed.
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// Requests per second.
    pub rps: f64,
    /// Failed / requests.
    pub failed_rate: f64,
    /// `http_req_duration` median, ms.
    pub p50_ms: Option<f64>,
    /// 95th percentile, ms.
    pub p95_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Check passes over all checks.
    pub checks_passed: u64,
    /// Check failures over all checks.
    pub checks_failed: u64,
    /// Whether every threshold passed (true without thresholds).
    pub thresholds_ok: bool,
    /// The exit code the run's verdict gave (`summary.json`'s `judged.exit_code`:
    /// 0, or 99 when anything judged failed: a threshold, an event's expectation,
    /// the soak, or every request failing).
    pub exit_code: i32,
    /// Stopped early.
    pub interrupted: bool,
    /// The result directory, absolute.
    pub result_dir: PathBuf,
    /// User labels (`--label k=v`) and `commit` when run in a git repository.
    pub labels: BTreeMap<String, String>,
    /// Per-step figures, by step name.
    pub steps: Vec<StepFigures>,
    /// All `sse:` steps' LLM figures (runs with LLM streams only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmRecord>,
}

fn bad(dir: &Path, reason: impl Into<String>) -> HistoryError {
    HistoryError::ResultDir {
        dir: dir.to_path_buf(),
        reason: reason.into(),
    }
}

fn read_json<T: DeserializeOwned>(dir: &Path, file: &str) -> Result<T, HistoryError> {
    let p = dir.join(file);
    let text = std::fs::read_to_string(&p).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => bad(
            dir,
            format!(
                "no {file}: not a finished pado result (`pado report DIR` writes summary.json)"
            ),
        ),
        _ => bad(dir, format!("{file}: {e}")),
    })?;
    serde_json::from_str(&text).map_err(|e| bad(dir, format!("{file}: {e}")))
}

/// A figure JSON can hold that means something (no NaN or infinity).
fn finite(x: Option<f64>) -> Option<f64> {
    x.filter(|x| x.is_finite())
}

/// `value` with every object's keys sorted, so equal content hashes equally
/// whatever order a writer put the keys in.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        _ => v.clone(),
    }
}

/// The scenario hash of a run.json: its `plan_id` (of the segment, or of a merged
/// run's first generator) when it has one, else the SHA-256 of its `scenarios`,
/// `stages` and `thresholds` as written.
pub fn scenario_hash(run: &RunView) -> String {
    if let Some(p) = run.plan_id() {
        return p.to_string();
    }
    let mut h = Sha256::new();
    for (key, part) in [
        ("scenarios", &run.scenarios),
        ("stages", &run.stages),
        ("thresholds", &run.thresholds),
    ] {
        let part = canonical(part.as_ref().unwrap_or(&Value::Null));
        h.update(key.as_bytes());
        h.update(serde_json::to_vec(&part).unwrap_or_default());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn unix_ms(started_at: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(started_at, &time::format_description::well_known::Rfc3339)
        .ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// How a result directory came to be, when the caller does not say: a merge from
/// `merged_from`, a find-capacity step from its `step-NN-…` name, a run otherwise.
fn infer_kind(dir: &Path, run: &RunView) -> Kind {
    let step_dir = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("step-"));
    if !run.merged_from.is_empty() {
        Kind::Merge
    } else if step_dir {
        Kind::CapacityStep
    } else {
        Kind::Run
    }
}

/// Each step's row, by step name.
fn step_figures(sum: &SummaryFigures) -> Vec<StepFigures> {
    sum.steps
        .iter()
        .map(|(step, s)| StepFigures {
            step: step.clone(),
            requests: s.requests,
            failed: s.failed,
            rps: finite(s.rps).unwrap_or(0.0),
            failed_rate: pado_base::units::share(s.failed, s.requests),
            p50_ms: finite(s.latency_ms.p50),
            p95_ms: finite(s.latency_ms.p95),
            p99_ms: finite(s.latency_ms.p99),
            llm: LlmRecord::of(s.sse.as_ref()),
        })
        .collect()
}

/// `run.json`, refused unless it is a whole test's pado result.
fn read_run(dir: &Path) -> Result<RunView, HistoryError> {
    let run: RunView = read_json(dir, RUN_FILE)?;
    if run.format.as_deref() != Some("pado-result") {
        return Err(bad(
            dir,
            "run.json: not a pado result (no `format: pado-result`)",
        ));
    }
    if run.segment.is_some() {
        return Err(bad(
            dir,
            "a segment of a split test: its merged result is what gets recorded",
        ));
    }
    Ok(run)
}

impl RunRecord {
    /// Read a finished result directory. `kind` is what the caller knows; `None`
    /// infers it (a merge from `merged_from`, a find-capacity step from its
    /// `step-NN-…` directory name, a run otherwise). A segment of a split test is
    /// refused: its merge is the test.
    pub fn from_result_dir(
        dir: &Path,
        kind: Option<Kind>,
        labels: BTreeMap<String, String>,
    ) -> Result<RunRecord, HistoryError> {
        let dir = std::fs::canonicalize(dir).map_err(|e| bad(dir, e.to_string()))?;
        let run = read_run(&dir)?;
        let sum: SummaryFigures = read_json(&dir, SUMMARY_FILE)?;
        let kind = kind.unwrap_or_else(|| infer_kind(&dir, &run));
        let started_at = sum
            .started_at
            .clone()
            .or_else(|| run.started_at.clone())
            .unwrap_or_default();
        let started_unix_ms = unix_ms(&started_at).ok_or_else(|| {
            bad(
                &dir,
                format!("run.json: started_at `{started_at}` is not RFC 3339"),
            )
        })?;
        let timed = |x: Option<f64>| finite(x).filter(|_| sum.requests > 0);
        Ok(RunRecord {
            name: sum
                .name
                .clone()
                .or_else(|| run.name.clone())
                .unwrap_or_default(),
            kind,
            started_at,
            started_unix_ms,
            duration_s: finite(sum.duration_s)
                .or_else(|| finite(run.duration_s))
                .unwrap_or(0.0),
            scenario_hash: scenario_hash(&run),
            requests: sum.requests,
            failed: sum.failed,
            rps: finite(sum.rps).unwrap_or(0.0),
            failed_rate: finite(sum.failed_rate).unwrap_or(0.0),
            p50_ms: timed(sum.latency_ms.p50),
            p95_ms: timed(sum.latency_ms.p95),
            p99_ms: timed(sum.latency_ms.p99),
            checks_passed: sum.checks.values().map(|c| c.passes).sum(),
            checks_failed: sum.checks.values().map(|c| c.fails).sum(),
            thresholds_ok: sum.thresholds_ok.unwrap_or(true),
            exit_code: sum.exit_code(),
            interrupted: sum.interrupted.or(run.interrupted).unwrap_or(false),
            result_dir: dir,
            labels,
            steps: step_figures(&sum),
            llm: LlmRecord::of(sum.sse.as_ref()),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal finished result directory with the figures given.
    pub(crate) fn write_result(
        dir: &Path,
        name: &str,
        started_at: &str,
        p95: f64,
        extra_run: Value,
    ) {
        std::fs::create_dir_all(dir).unwrap();
        let mut run = serde_json::json!({
            "format": "pado-result", "version": 1, "name": name, "started_at": started_at,
            "duration_s": 10.0, "scenarios": [{"name": "default", "executor": "constant-vus"}],
            "stages": [], "thresholds": []
        });
        if let (Some(r), Some(e)) = (run.as_object_mut(), extra_run.as_object()) {
            for (k, v) in e {
                r.insert(k.clone(), v.clone());
            }
        }
        std::fs::write(dir.join("run.json"), run.to_string()).unwrap();
        let sum = serde_json::json!({
            "name": name, "started_at": started_at, "duration_s": 10.0, "requests": 1000,
            "failed": 10, "rps": 100.0, "failed_rate": 0.01, "thresholds_ok": false,
            "latency_ms": {"p50": 10.0, "p95": p95, "p99": 40.0},
            "checks": {"a": {"passes": 5, "fails": 1}, "b": {"passes": 7, "fails": 0}},
            "steps": {"검색": {"requests": 400, "failed": 4, "rps": 40.0, "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": 3.0}}}
        });
        std::fs::write(dir.join("summary.json"), sum.to_string()).unwrap();
    }

    #[test]
    fn figures_come_from_the_summary() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("r");
        write_result(
            &d,
            "부하 시험",
            "2026-11-23T10:00:00.500Z",
            25.0,
            Value::Null,
        );
        let r = RunRecord::from_result_dir(&d, None, BTreeMap::new()).unwrap();
        assert_eq!(r.name, "부하 시험");
        assert_eq!(r.kind, Kind::Run);
        assert_eq!(r.started_unix_ms, 1_795_428_000_500);
        assert_eq!((r.requests, r.failed), (1000, 10));
        assert_eq!(r.p95_ms, Some(25.0));
        assert_eq!((r.checks_passed, r.checks_failed), (12, 1));
        assert!(!r.thresholds_ok);
        assert_eq!(r.exit_code, 99);
        assert!(r.result_dir.is_absolute());
        assert_eq!(r.steps.len(), 1);
        assert_eq!(r.steps[0].step, "검색");
        assert_eq!(r.steps[0].failed_rate, 0.01);
        assert_eq!(r.scenario_hash.len(), 64);
    }

    #[test]
    fn the_exit_code_is_the_verdicts_whatever_failed() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("r");
        write_result(&d, "x", "2026-11-23T10:00:00Z", 1.0, Value::Null);
        let sum_path = d.join("summary.json");
        let base: Value =
            serde_json::from_str(&std::fs::read_to_string(&sum_path).unwrap()).unwrap();
        let with = |edits: Value| {
            let mut s = base.clone();
            for (k, v) in edits.as_object().unwrap() {
                s[k] = v.clone();
            }
            std::fs::write(&sum_path, s.to_string()).unwrap();
            RunRecord::from_result_dir(&d, None, BTreeMap::new()).unwrap()
        };
        // Thresholds passed, an event's expectation failed: the verdict's 99.
        let r = with(
            serde_json::json!({"thresholds_ok": true, "events_ok": false,
            "judged": {"passed": false, "exit_code": 99, "items": []}}),
        );
        assert!(r.thresholds_ok);
        assert_eq!(r.exit_code, 99);
        // An older summary without the verdict: its events and soak still count.
        let r = with(serde_json::json!({"thresholds_ok": true, "soak_ok": false}));
        assert_eq!(r.exit_code, 99);
        let r = with(serde_json::json!({"thresholds_ok": true}));
        assert_eq!(r.exit_code, 0);
        let r = with(serde_json::json!({"thresholds_ok": true,
            "judged": {"passed": true, "exit_code": 0, "items": []}}));
        assert_eq!(r.exit_code, 0);
    }

    #[test]
    fn the_plan_id_is_the_hash_of_a_merged_run_and_segments_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let m = t.path().join("merged");
        let merged = serde_json::json!({"merged_from": [{"segment": {"plan_id": "abc123"}}]});
        write_result(&m, "x", "2026-11-23T10:00:00Z", 1.0, merged);
        let r = RunRecord::from_result_dir(&m, None, BTreeMap::new()).unwrap();
        assert_eq!(r.kind, Kind::Merge);
        assert_eq!(r.scenario_hash, "abc123");
        let s = t.path().join("seg");
        write_result(
            &s,
            "x",
            "2026-11-23T10:00:00Z",
            1.0,
            serde_json::json!({"segment": {"plan_id": "p"}}),
        );
        let e = RunRecord::from_result_dir(&s, None, BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("segment"), "{e}");
    }

    #[test]
    fn the_scenario_hash_ignores_key_order_but_not_content() {
        let a =
            serde_json::json!({"scenarios": [{"a": 1, "b": 2}], "stages": [], "thresholds": []});
        let b: Value = serde_json::from_str(
            r#"{"thresholds": [], "stages": [], "scenarios": [{"b": 2, "a": 1}]}"#,
        )
        .unwrap();
        let c =
            serde_json::json!({"scenarios": [{"a": 1, "b": 3}], "stages": [], "thresholds": []});
        let hash = |v: Value| scenario_hash(&serde_json::from_value(v).unwrap());
        assert_eq!(hash(a.clone()), hash(b));
        assert_ne!(hash(a), hash(c));
    }

    #[test]
    fn a_directory_without_a_summary_is_named() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("run.json"), r#"{"format":"pado-result"}"#).unwrap();
        let e = RunRecord::from_result_dir(t.path(), None, BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("no summary.json"), "{e}");
    }
}

//! k6's `export const options` as pado's configuration: its scenarios (or the
//! shortcuts `vus`/`duration`/`iterations`/`stages`) as pado scenarios, whose
//! executors already carry k6's names, and its thresholds in k6's own language.
//! What pado cannot run is an error naming the option, never ignored silently.

use std::collections::BTreeMap;

use pado_scenario::model::{Config, Scenario, ThresholdEntry};
use serde_json::{json, Map, Value};

use crate::error::ScriptError;

/// What the options say, as pado's configuration (`file` names the script in
/// errors, `name` is the test's name). `exports` are the script's exported
/// functions (a scenario's `exec` must name one).
pub(crate) fn to_config(
    options: &Value,
    file: &str,
    name: &str,
    exports: &[String],
) -> Result<Config, ScriptError> {
    let err = |field: &str, why: String| ScriptError::Options {
        file: file.to_string(),
        field: field.to_string(),
        why,
    };
    let empty = Map::new();
    let o = match options {
        Value::Object(m) => m,
        Value::Null => &empty,
        _ => return Err(err("", "must be an object".into())),
    };
    let mut scenarios = Vec::new();
    match o.get("scenarios") {
        Some(Value::Object(sc)) if !sc.is_empty() => {
            for (sname, s) in sc {
                let field = format!("scenarios.{sname}");
                let Value::Object(s) = s else {
                    return Err(err(&field, "must be an object".into()));
                };
                let exec = match s.get("exec") {
                    None => "default".to_string(),
                    Some(Value::String(e)) => e.clone(),
                    Some(_) => {
                        return Err(err(&format!("{field}.exec"), "must be a string".into()))
                    }
                };
                if !exports.contains(&exec) {
                    return Err(err(
                        &format!("{field}.exec"),
                        format!("the script exports no function `{exec}`"),
                    ));
                }
                let mut sc = scenario(s, &field, file)?;
                sc.script_exec = Some(exec);
                scenarios.push((sname.clone(), sc));
            }
        }
        Some(Value::Object(_)) | None => {
            if !exports.iter().any(|e| e == "default") {
                return Err(err(
                    "scenarios",
                    "the script exports no default function and names no scenario to run".into(),
                ));
            }
            let mut sc = shortcut(o, file)?;
            sc.script_exec = Some("default".into());
            scenarios.push(("default".to_string(), sc));
        }
        Some(_) => return Err(err("scenarios", "must be an object".into())),
    }
    let thresholds: BTreeMap<String, Vec<ThresholdEntry>> = match o.get("thresholds") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(t) => {
            let t = match t {
                // A single expression is a list of one, as k6 reads it.
                Value::Object(m) => Value::Object(
                    m.iter()
                        .map(|(k, v)| match v {
                            Value::Array(_) => (k.clone(), v.clone()),
                            other => (k.clone(), Value::Array(vec![other.clone()])),
                        })
                        .collect(),
                ),
                other => other.clone(),
            };
            serde_json::from_value(t).map_err(|e| err("thresholds", e.to_string()))?
        }
    };
    let mut cfg = Config {
        name: Some(name.to_string()),
        thresholds,
        scenarios,
        ..Config::default()
    };
    // k6's `insecureSkipTLSVerify`: every TLS connection (HTTP, WebSocket,
    // gRPC) accepts any server certificate, as `--insecure`.
    match o.get("insecureSkipTLSVerify") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => cfg.defaults.insecure = *b,
        Some(_) => return Err(err("insecureSkipTLSVerify", "must be true or false".into())),
    }
    Ok(cfg)
}

/// The load the top-level shortcuts describe, as k6 reads them.
fn shortcut(o: &Map<String, Value>, file: &str) -> Result<Scenario, ScriptError> {
    let vus = o.get("vus").cloned();
    let mut s = Map::new();
    if let Some(stages) = o.get("stages").filter(|v| !v.is_null()) {
        s.insert("executor".into(), json!("ramping-vus"));
        s.insert("startVUs".into(), vus.unwrap_or(json!(1)));
        s.insert("stages".into(), stages.clone());
    } else if let Some(iters) = o.get("iterations").filter(|v| !v.is_null()) {
        // k6: `iterations` shares that many iterations among the VUs.
        let vus = vus.unwrap_or(json!(1));
        s.insert("executor".into(), json!("shared-iterations"));
        s.insert("vus".into(), vus.clone());
        s.insert("iterations".into(), iters.clone());
        if let Some(d) = o.get("duration").filter(|v| !v.is_null()) {
            s.insert("maxDuration".into(), d.clone());
        }
        let shared = scenario(&s, "", file);
        // Without shared-iterations, the same total split evenly is exact.
        let (n, v) = (
            iters.as_u64().unwrap_or(0),
            vus.as_u64().unwrap_or(1).max(1),
        );
        if shared.is_err() && n > 0 && n % v == 0 {
            s.insert("executor".into(), json!("per-vu-iterations"));
            s.insert("iterations".into(), json!(n / v));
            return scenario(&s, "", file);
        }
        return shared;
    } else if let Some(d) = o.get("duration").filter(|v| !v.is_null()) {
        s.insert("executor".into(), json!("constant-vus"));
        s.insert("vus".into(), vus.unwrap_or(json!(1)));
        s.insert("duration".into(), d.clone());
    } else {
        // k6's default: one VU, one iteration.
        s.insert("executor".into(), json!("per-vu-iterations"));
        s.insert("vus".into(), vus.unwrap_or(json!(1)));
        s.insert("iterations".into(), json!(1));
    }
    scenario(&s, "", file)
}

/// One k6 scenario as a pado scenario.
fn scenario(s: &Map<String, Value>, field: &str, file: &str) -> Result<Scenario, ScriptError> {
    let at = |k: &str| {
        if field.is_empty() {
            k.to_string()
        } else {
            format!("{field}.{k}")
        }
    };
    let err = |k: &str, why: String| ScriptError::Options {
        file: file.to_string(),
        field: at(k),
        why,
    };
    // k6's names to pado's: durations may be numbers (milliseconds).
    const FIELDS: &[(&str, &str, bool)] = &[
        ("executor", "executor", false),
        ("vus", "vus", false),
        ("duration", "duration", true),
        ("iterations", "iterations", false),
        ("startVUs", "start_vus", false),
        ("startRate", "start_rate", false),
        ("rate", "rate", false),
        ("timeUnit", "time_unit", true),
        ("preAllocatedVUs", "pre_allocated_vus", false),
        ("maxVUs", "max_vus", false),
        ("maxDuration", "max_duration", true),
        ("startTime", "start_time", true),
        ("gracefulStop", "graceful_stop", true),
        ("gracefulRampDown", "graceful_ramp_down", true),
    ];
    const IGNORED: &[&str] = &["exec", "env", "tags", "options"];
    let mut out = Map::new();
    for (k, v) in s {
        if v.is_null() {
            continue;
        }
        if k == "stages" {
            let Value::Array(st) = v else {
                return Err(err(k, "must be a list of { duration, target }".into()));
            };
            let st: Vec<Value> = st
                .iter()
                .map(|x| {
                    let mut x = x.clone();
                    if let Some(d) = x.get_mut("duration") {
                        *d = duration(d);
                    }
                    x
                })
                .collect();
            out.insert("stages".into(), Value::Array(st));
            continue;
        }
        if let Some((_, pado, is_dur)) = FIELDS.iter().find(|(k6, _, _)| k6 == k) {
            let v = if *is_dur { duration(v) } else { v.clone() };
            out.insert((*pado).into(), v);
        } else if !IGNORED.contains(&k.as_str()) {
            return Err(err(k, "pado does not know this scenario option".into()));
        }
    }
    // k6 refuses shared iterations fewer than their VUs (each VU must get one).
    if out.get("executor").and_then(Value::as_str) == Some("shared-iterations") {
        let n = |k: &str| out.get(k).and_then(Value::as_u64).unwrap_or(1);
        let (iterations, vus) = (n("iterations"), n("vus"));
        if iterations < vus {
            return Err(err(
                "iterations",
                format!(
                    "the number of iterations ({iterations}) can't be less than the number of \
                     VUs ({vus}), as k6 says: give at least {vus} iterations or fewer VUs"
                ),
            ));
        }
    }
    serde_json::from_value::<Scenario>(Value::Object(out)).map_err(|e| {
        let text = e.to_string();
        if text.contains("shared-iterations") {
            err(
                "executor",
                "the shared-iterations executor is not available in this pado yet; give \
                 each VU its share with per-vu-iterations (or `vus` and `duration`)"
                    .into(),
            )
        } else {
            err("", text)
        }
    })
}

/// A k6 duration: a string as written, or a number of milliseconds.
fn duration(v: &Value) -> Value {
    match v {
        Value::Number(n) => Value::String(format!("{}ms", n.as_f64().unwrap_or(0.0))),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pado_scenario::model::ExecutorKind;

    fn exports() -> Vec<String> {
        vec!["default".into(), "login".into()]
    }

    #[test]
    fn shared_iterations_fewer_than_vus_are_refused_as_k6_refuses_them() {
        // k6: "the number of iterations (2) can't be less than the number of VUs (10)".
        let e = to_config(
            &json!({"scenarios": {"all": {"executor": "shared-iterations", "vus": 10, "iterations": 2}}}),
            "s.js",
            "s",
            &exports(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("options.scenarios.all.iterations"), "{e}");
        assert!(
            e.contains("iterations (2)") && e.contains("VUs (10)"),
            "{e}"
        );
        // As many iterations as VUs is fine.
        to_config(
            &json!({"scenarios": {"all": {"executor": "shared-iterations", "vus": 10, "iterations": 10}}}),
            "s.js",
            "s",
            &exports(),
        )
        .unwrap();
    }

    #[test]
    fn insecure_skip_tls_verify_is_the_runs_insecure_setting() {
        let cfg = |o: serde_json::Value| to_config(&o, "s.js", "s", &exports());
        assert!(!cfg(json!({})).unwrap().defaults.insecure);
        assert!(
            cfg(json!({"insecureSkipTLSVerify": true}))
                .unwrap()
                .defaults
                .insecure
        );
        let e = cfg(json!({"insecureSkipTLSVerify": "yes"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("insecureSkipTLSVerify"), "{e}");
    }

    #[test]
    fn vus_and_duration_are_constant_vus() {
        let c = to_config(
            &json!({"vus": 10, "duration": "30s"}),
            "s.js",
            "s",
            &exports(),
        )
        .unwrap();
        let (name, s) = &c.scenarios[0];
        assert_eq!(name, "default");
        assert_eq!(s.executor, ExecutorKind::ConstantVus);
        assert_eq!(s.vus, Some(10));
        assert_eq!(
            s.duration.map(|d| d.get()),
            Some(std::time::Duration::from_secs(30))
        );
        assert_eq!(s.script_exec.as_deref(), Some("default"));
    }

    #[test]
    fn no_options_is_one_vu_one_iteration_as_k6() {
        let c = to_config(&Value::Null, "s.js", "s", &exports()).unwrap();
        let s = &c.scenarios[0].1;
        assert_eq!(s.executor, ExecutorKind::PerVuIterations);
        assert_eq!((s.vus, s.iterations), (Some(1), Some(1)));
    }

    #[test]
    fn iterations_split_evenly_are_exact_without_shared_iterations() {
        let c = to_config(&json!({"vus": 2, "iterations": 6}), "s.js", "s", &exports());
        let s = &c.unwrap().scenarios[0].1;
        if s.executor == ExecutorKind::PerVuIterations {
            assert_eq!((s.vus, s.iterations), (Some(2), Some(3)));
        } else {
            assert_eq!((s.vus, s.iterations), (Some(2), Some(6)));
        }
    }

    #[test]
    fn stages_ramp_from_vus_with_millisecond_numbers() {
        let o =
            json!({"stages": [{"duration": 1500, "target": 5}, {"duration": "1m", "target": 0}]});
        let c = to_config(&o, "s.js", "s", &exports()).unwrap();
        let s = &c.scenarios[0].1;
        assert_eq!(s.executor, ExecutorKind::RampingVus);
        assert_eq!(s.start_vus, Some(1));
        let st = s.stages.as_ref().unwrap();
        assert_eq!(st[0].duration.get(), std::time::Duration::from_millis(1500));
        assert_eq!(st[1].target, 0.0);
    }

    #[test]
    fn scenarios_map_k6_names_and_exec() {
        let o = json!({"scenarios": {"open": {
            "executor": "constant-arrival-rate", "rate": 20, "timeUnit": "1s",
            "duration": "10s", "preAllocatedVUs": 5, "maxVUs": 50, "exec": "login",
            "startTime": "2s", "gracefulStop": "5s"
        }}, "thresholds": {"http_req_duration": ["p(95)<500"], "checks": "rate>0.9"}});
        let c = to_config(&o, "s.js", "s", &exports()).unwrap();
        let (n, s) = &c.scenarios[0];
        assert_eq!(n, "open");
        assert_eq!(s.executor, ExecutorKind::ConstantArrivalRate);
        assert_eq!(
            (s.rate, s.pre_allocated_vus, s.max_vus),
            (Some(20.0), Some(5), Some(50))
        );
        assert_eq!(s.script_exec.as_deref(), Some("login"));
        assert_eq!(c.thresholds["http_req_duration"][0].expr(), "p(95)<500");
        assert_eq!(c.thresholds["checks"][0].expr(), "rate>0.9");
    }

    #[test]
    fn insecure_skip_tls_verify_is_pados_insecure_and_a_bad_value_is_named() {
        let ex = exports();
        let on = to_config(&json!({"insecureSkipTLSVerify": true}), "s.js", "s", &ex).unwrap();
        assert!(on.defaults.insecure);
        let off = to_config(&json!({}), "s.js", "s", &ex).unwrap();
        assert!(!off.defaults.insecure);
        let e = to_config(&json!({"insecureSkipTLSVerify": "yes"}), "s.js", "s", &ex)
            .unwrap_err()
            .to_string();
        assert!(e.contains("insecureSkipTLSVerify"), "{e}");
    }

    #[test]
    fn a_missing_exec_and_an_unknown_option_are_named() {
        let o = json!({"scenarios": {"a": {"executor": "constant-vus", "exec": "nope"}}});
        let e = to_config(&o, "s.js", "s", &exports())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("options.scenarios.a.exec") && e.contains("nope"),
            "{e}"
        );
        let o = json!({"scenarios": {"a": {"executor": "constant-vus", "vus": 1, "duration": "1s", "colour": 1}}});
        let e = to_config(&o, "s.js", "s", &exports())
            .unwrap_err()
            .to_string();
        assert!(e.contains("options.scenarios.a.colour"), "{e}");
    }
}

//! A script's own metrics and tags (`k6/metrics`, `options.tags`, a scenario's
//! `tags`, `--tag`): the metrics every VU declares, numbered once for the run so
//! an add carries a number to the engine; the names checked as k6 checks them;
//! the tags every sample of a scenario carries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pado_engine::script::ScriptMetric;
use pado_metrics::CustomKind;
use pado_scenario::metric_catalog::{self, MetricKind};
use serde_json::{Map, Value};

/// The longest metric name k6 takes, in characters.
const MAX_NAME: usize = 128;

/// Whether `name` is a metric name k6 takes: up to 128 letters, digits or
/// underscores, starting with a letter or an underscore. k6 takes ASCII letters
/// only; pado takes any script's letters too (Hangul: `응답_시간`), so every name
/// k6 runs runs here, and a non-ASCII one is pado's own extension.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c == '_' || c.is_alphabetic());
    let rest_ok = name.chars().all(|c| c == '_' || c.is_alphanumeric());
    if first_ok && rest_ok && name.chars().count() <= MAX_NAME {
        Ok(())
    } else {
        Err(format!(
            "invalid metric name `{name}`: a metric name is up to {MAX_NAME} letters, digits or underscores and starts with a letter or an underscore (k6's rule)"
        ))
    }
}

/// The metrics a script made, numbered in the order they were first declared:
/// every VU runs the script's init code and declares them again, getting the
/// same numbers.
#[derive(Default)]
pub(crate) struct MetricRegistry {
    list: Mutex<Vec<ScriptMetric>>,
}

impl MetricRegistry {
    /// Declare `name` as a metric of `kind` (k6's spelling: `counter`, `gauge`,
    /// `rate`, `trend`); its number, or why k6 would refuse it (a bad name, a
    /// name already taken by another kind).
    pub(crate) fn declare(&self, name: &str, kind: &str, is_time: bool) -> Result<u32, String> {
        let kind =
            CustomKind::parse(kind).ok_or_else(|| format!("unknown metric kind `{kind}`"))?;
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = list.iter().position(|m| &*m.name == name) {
            let m = &list[i];
            if m.kind != kind || m.is_time != is_time {
                return Err(format!(
                    "metric `{name}` already exists as a {}{}, not a {}{}",
                    m.kind.as_str(),
                    if m.is_time { " of times" } else { "" },
                    kind.as_str(),
                    if is_time { " of times" } else { "" },
                ));
            }
            return Ok(i as u32);
        }
        check_name(name)?;
        metric_catalog::register_custom(name, catalog_kind(kind), is_time)?;
        list.push(ScriptMetric {
            name: Arc::from(name),
            kind,
            is_time,
        });
        Ok((list.len() - 1) as u32)
    }

    /// Metric `id`, as declared.
    pub(crate) fn get(&self, id: u32) -> Option<ScriptMetric> {
        let list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        list.get(id as usize).cloned()
    }
}

/// The catalogue's kind of a custom metric's.
pub(crate) fn catalog_kind(k: CustomKind) -> MetricKind {
    match k {
        CustomKind::Counter => MetricKind::Counter,
        CustomKind::Gauge => MetricKind::Gauge,
        CustomKind::Rate => MetricKind::Rate,
        CustomKind::Trend => MetricKind::Trend,
    }
}

/// The tags every sample of each scenario carries (k6's test-wide tags): the
/// options' `tags`, then the scenario's `tags`, then `--tag` (the command line
/// wins, as in k6).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TestTags {
    /// `options.tags`, then `--tag`.
    all: Map<String, Value>,
    /// Each scenario's own `tags`.
    by_scenario: HashMap<String, Map<String, Value>>,
    /// `--tag`, applied last.
    cli: Map<String, Value>,
}

impl TestTags {
    /// Read from the options (`tags`, `scenarios.*.tags`) and the command line's
    /// `--tag NAME=VALUE` pairs. A tag's value is a string as k6 sends it (a
    /// number or a boolean written as text); anything else is an error naming
    /// the option.
    pub(crate) fn read(options: &Value, cli: &[(String, String)]) -> Result<TestTags, String> {
        let strings = |v: Option<&Value>, field: &str| -> Result<Map<String, Value>, String> {
            let mut out = Map::new();
            match v {
                None | Some(Value::Null) => {}
                Some(Value::Object(m)) => {
                    for (k, v) in m {
                        let s = match v {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            _ => {
                                return Err(format!(
                                    "{field}.{k}: a tag's value is a string, a number or a boolean"
                                ))
                            }
                        };
                        out.insert(k.clone(), Value::String(s));
                    }
                }
                Some(_) => return Err(format!("{field}: must be an object of tags")),
            }
            Ok(out)
        };
        let all = strings(options.get("tags"), "tags")?;
        let mut by_scenario = HashMap::new();
        if let Some(Value::Object(sc)) = options.get("scenarios") {
            for (name, s) in sc {
                let t = strings(s.get("tags"), &format!("scenarios.{name}.tags"))?;
                if !t.is_empty() {
                    by_scenario.insert(name.clone(), t);
                }
            }
        }
        let cli = cli
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        Ok(TestTags {
            all,
            by_scenario,
            cli,
        })
    }

    /// The tags of scenario `scenario`'s samples, as a JSON object.
    pub(crate) fn of(&self, scenario: &str) -> Map<String, Value> {
        let mut out = self.all.clone();
        if let Some(t) = self.by_scenario.get(scenario) {
            out.extend(t.clone());
        }
        out.extend(self.cli.clone());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_k6s_rule_and_take_hangul() {
        for ok in ["RTT", "my_trend", "_x", "응답_시간", "a1"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "bad-name", "1abc", "a b", "x.y", &"a".repeat(129)] {
            let e = check_name(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")), "{e}");
        }
        assert!(check_name(&"a".repeat(128)).is_ok());
    }

    #[test]
    fn a_name_keeps_its_number_and_its_kind() {
        let r = MetricRegistry::default();
        let a = r.declare("k6metrics_test_a", "trend", true).unwrap();
        let b = r.declare("k6metrics_test_b", "counter", false).unwrap();
        assert_eq!(r.declare("k6metrics_test_a", "trend", true), Ok(a));
        assert_ne!(a, b);
        let e = r.declare("k6metrics_test_a", "trend", false).unwrap_err();
        assert!(
            e.contains("k6metrics_test_a") && e.contains("of times"),
            "{e}"
        );
        let e = r.declare("k6metrics_test_b", "rate", false).unwrap_err();
        assert!(e.contains("counter") && e.contains("rate"), "{e}");
        // A built-in name of another kind or unit is refused, as k6 does.
        let e = r.declare("http_req_duration", "trend", false).unwrap_err();
        assert!(e.contains("http_req_duration"), "{e}");
        assert!(r.declare("http_reqs", "counter", false).is_ok());
        assert_eq!(r.get(a).unwrap().name.as_ref(), "k6metrics_test_a");
        assert!(r.get(99).is_none());
    }

    #[test]
    fn test_tags_layer_options_scenario_then_command_line() {
        let o = json!({
            "tags": {"env": "staging", "team": "파도", "n": 3},
            "scenarios": {"buy": {"tags": {"env": "buy-env", "flow": "구매"}}}
        });
        let t = TestTags::read(&o, &[("team".into(), "cli".into())]).unwrap();
        let buy = t.of("buy");
        assert_eq!(buy["env"], "buy-env");
        assert_eq!(buy["flow"], "구매");
        assert_eq!(buy["team"], "cli");
        assert_eq!(buy["n"], "3");
        let other = t.of("other");
        assert_eq!(other["env"], "staging");
        assert!(other.get("flow").is_none());
        let e = TestTags::read(&json!({"tags": {"x": [1]}}), &[]).unwrap_err();
        assert!(e.contains("tags.x"), "{e}");
    }
}

//! Rules of `experiment:`: a knob with a name, values that expand to a short list
//! of finite numbers, exactly one action in `apply:` and `restore:`, exactly one
//! check in `ready:`, exactly one of `find_capacity:` and `fixed:`, an SLA that
//! parses, and templates that are only `{{ value }}` and `{{ env.X }}`.

use super::validator::Validator;
use crate::experiment::{fill_value, Action, Experiment, Ready, FIXED_METRICS, MAX_VALUES};
use crate::model::Config;

const AT: &str = "experiment";

impl Validator<'_> {
    pub(super) fn experiment(&mut self, x: &Experiment, c: &Config) {
        if x.knob.name.trim().is_empty() {
            self.err(
                "experiment.knob.name",
                "the knob needs a name",
                Some("e.g. `knob: { name: pool_size, unit: connections }`"),
            );
        } else if x.knob.name.contains('=') || x.knob.name.chars().any(char::is_control) {
            self.err(
                "experiment.knob.name",
                "a knob's name becomes the history label `name=value`: no `=` or control characters",
                None,
            );
        }
        self.values(x);
        self.experiment_action("experiment.apply", &x.apply);
        if let Some(r) = &x.restore {
            self.experiment_action("experiment.restore", r);
        }
        if let Some(r) = &x.ready {
            self.ready(r);
        }
        self.measure(x);
        if x.cost_per_unit.is_some_and(|c| !(c.is_finite() && c > 0.0)) {
            self.err(
                "experiment.cost_per_unit",
                "a cost must be a number above 0",
                None,
            );
        }
        if x.scenario.is_some() && !c.scenarios.is_empty() {
            self.err(
                "experiment.scenario",
                "both `experiment.scenario` and `scenarios:` here: which load runs at each value?",
                Some("keep the scenarios in the named file, or drop `experiment.scenario` to run this file's"),
            );
        }
        if x.scenario.as_deref().is_some_and(|s| s.trim().is_empty()) {
            self.err("experiment.scenario", "empty file name", None);
        }
    }

    fn values(&mut self, x: &Experiment) {
        let field = "experiment.values";
        match x.values.expand() {
            None => self.err(
                field,
                format!("the range never ends or has more than {MAX_VALUES} values"),
                Some("`{ from: 1, to: 8, step: 1 }`: `to` at least `from`, `step` above 0"),
            ),
            Some(v) if v.is_empty() => {
                self.err(field, "no values to try", Some("e.g. `values: [1, 2, 4]`"))
            }
            Some(v) if v.len() > MAX_VALUES => self.err(
                field,
                format!("{} values: at most {MAX_VALUES}", v.len()),
                None,
            ),
            Some(v) if v.iter().any(|n| !n.is_finite()) => {
                self.err(field, "every value must be a finite number", None)
            }
            Some(v) => {
                let mut seen: Vec<f64> = Vec::new();
                for n in v {
                    if seen.contains(&n) {
                        self.err(
                            field,
                            format!("{n} is given twice: each value is one point"),
                            None,
                        );
                        break;
                    }
                    seen.push(n);
                }
            }
        }
    }

    fn experiment_action(&mut self, at: &str, a: &Action) {
        self.one_action(
            at,
            a,
            "needs",
            Some(
                "e.g. `run: [\"kubectl\", \"scale\", \"deploy/api\", \"--replicas={{ value }}\"]`",
            ),
        );
        // `{{ value }}` is the experiment's own; what is left must be `{{ env.X }}`.
        let run: Option<Vec<String>> = a
            .run
            .as_ref()
            .map(|v| v.iter().map(|s| fill_value(s, "0")).collect());
        let shell = a.shell.as_deref().map(|s| fill_value(s, "0"));
        let http = a.http.as_ref().map(|h| {
            let mut h = h.clone();
            h.url = fill_value(&h.url, "0");
            h.body = h.body.map(|b| fill_value(&b, "0"));
            h.headers = h
                .headers
                .into_iter()
                .map(|(k, v)| (k, fill_value(&v, "0")))
                .collect();
            h
        });
        self.action_parts(at, run.as_deref(), shell.as_deref(), http.as_ref());
    }

    fn ready(&mut self, r: &Ready) {
        let at = "experiment.ready";
        let n = [
            r.http.is_some(),
            r.run.is_some(),
            r.shell.is_some(),
            r.metric.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if n != 1 {
            self.err(
                at,
                "needs exactly one of `http`, `run`, `shell` or `metric`",
                Some("e.g. `http: { url: /health, status: 200 }`"),
            );
        }
        for (name, d) in [("timeout", r.timeout), ("every", r.every)] {
            if d.is_some_and(|d| d.get().is_zero()) {
                self.err(
                    &format!("{at}.{name}"),
                    format!("{name} must be more than 0"),
                    None,
                );
            }
        }
        if let Some(h) = &r.http {
            self.env_only(&format!("{at}.http.url"), &fill_value(&h.url, "0"));
            if h.status.is_some_and(|s| !(100..=599).contains(&s)) {
                self.err(
                    &format!("{at}.http.status"),
                    "a status is between 100 and 599",
                    None,
                );
            }
        }
        if let Some(m) = &r.metric {
            if m.name.trim().is_empty() {
                self.err(&format!("{at}.metric.name"), "no metric named", None);
            }
            if m.within_pct.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
                self.err(
                    &format!("{at}.metric.within_pct"),
                    "a spread in % is a number from 0 up",
                    None,
                );
            }
            match url::Url::parse(&fill_value(&m.url, "0")) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => {}
                _ => self.err(
                    &format!("{at}.metric.url"),
                    format!("`{}` is not an http(s) URL", m.url),
                    Some("e.g. `http://127.0.0.1:8080/metrics`"),
                ),
            }
        }
        let run: Option<Vec<String>> = r
            .run
            .as_ref()
            .map(|v| v.iter().map(|s| fill_value(s, "0")).collect());
        let shell = r.shell.as_deref().map(|s| fill_value(s, "0"));
        self.action_parts(at, run.as_deref(), shell.as_deref(), None);
    }

    fn measure(&mut self, x: &Experiment) {
        match (&x.find_capacity, &x.fixed) {
            (Some(_), Some(_)) | (None, None) => self.err(
                AT,
                "give exactly one of `find_capacity:` (the highest rate under an SLA at each value) or `fixed:` (the scenario's own load, one figure measured)",
                Some("e.g. `find_capacity: { sla: [\"p(95) < 200\"], start_rate: 20 }`"),
            ),
            _ => {}
        }
        if let Some(f) = &x.find_capacity {
            for (i, e) in f.sla.iter().enumerate() {
                if let Err(err) = crate::thresholds::parse_cli(e) {
                    self.err(
                        &format!("experiment.find_capacity.sla[{i}]"),
                        format!("`{e}`: {err}"),
                        None,
                    );
                }
            }
            for (name, v) in [
                ("start_rate", f.start_rate),
                ("factor", f.factor),
                ("max_rate", f.max_rate),
            ] {
                if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                    self.err(
                        &format!("experiment.find_capacity.{name}"),
                        "must be a number above 0",
                        None,
                    );
                }
            }
            if f.factor.is_some_and(|v| v <= 1.0) {
                self.err(
                    "experiment.find_capacity.factor",
                    "must be above 1: each step raises the rate",
                    None,
                );
            }
            if f.hold
                .is_some_and(|d| d.get() < std::time::Duration::from_secs(1))
            {
                self.err(
                    "experiment.find_capacity.hold",
                    "each step holds its rate at least 1s",
                    None,
                );
            }
        }
        if let Some(m) = x.fixed.as_ref().and_then(|f| f.metric.as_deref()) {
            if !FIXED_METRICS.contains(&m) {
                self.err(
                    "experiment.fixed.metric",
                    format!("`{m}` is not one of {}", FIXED_METRICS.join(", ")),
                    None,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::error::ScenarioError;

    fn problems(yaml: &str) -> Vec<(Option<usize>, String, String)> {
        match crate::parse_str(yaml, "exp.yaml") {
            Ok(_) => Vec::new(),
            Err(ScenarioError::Invalid(d)) => d
                .into_iter()
                .map(|d| (d.line, d.field, d.message))
                .collect(),
            Err(e) => panic!("{e}"),
        }
    }

    const GOOD: &str = "experiment:
  scenario: load.yaml
  knob: { name: pool_size, unit: connections }
  values: [1, 2, 4]
  apply:
    http: { method: POST, url: 'http://127.0.0.1:1/admin/faults', json: { pool_size: '{{ value }}' } }
  ready:
    http: { url: 'http://127.0.0.1:1/health', status: 200 }
  find_capacity: { sla: ['p(95) < 200'], start_rate: 10 }
  restore:
    run: [echo, '{{ value }}']
";

    #[test]
    fn a_file_of_its_own_naming_its_scenario_is_valid() {
        assert_eq!(problems(GOOD), Vec::new());
        let c = crate::parse_str(GOOD, "exp.yaml").unwrap();
        let x = c.experiment.unwrap();
        assert_eq!(x.values.expand().unwrap(), [1.0, 2.0, 4.0]);
        assert_eq!(x.scenario.as_deref(), Some("load.yaml"));
    }

    #[test]
    fn each_mistake_is_named_at_its_line_and_field() {
        let bad = GOOD
            .replace("values: [1, 2, 4]", "values: { from: 4, to: 1 }")
            .replace(
                "find_capacity: { sla: ['p(95) < 200'], start_rate: 10 }",
                "find_capacity: { sla: ['p(95) <'], factor: 1 }",
            )
            .replace(
                "    run: [echo, '{{ value }}']",
                "    run: [echo, '{{ value }}']\n    shell: 'echo'",
            );
        let p = problems(&bad);
        let has = |line: usize, field: &str, words: &str| {
            p.iter()
                .any(|(l, f, m)| *l == Some(line) && f == field && m.contains(words))
        };
        assert!(has(4, "experiment.values", "never ends"), "{p:?}");
        assert!(
            has(9, "experiment.find_capacity.sla[0]", "p(95) <"),
            "{p:?}"
        );
        assert!(
            has(9, "experiment.find_capacity.factor", "above 1"),
            "{p:?}"
        );
        assert!(has(10, "experiment.restore", "exactly one"), "{p:?}");
        // A misspelled field is the structure pass's, at its own line.
        let p = problems(
            &GOOD
                .replace("on_failure", "x")
                .replace("  ready:", "  reddy:"),
        );
        assert!(
            p.iter()
                .any(|(l, f, _)| *l == Some(7) && f.contains("reddy")),
            "{p:?}"
        );
    }

    #[test]
    fn a_template_other_than_the_value_or_env_is_refused() {
        let p = problems(&GOOD.replace("[echo, '{{ value }}']", "[echo, '{{ user.id }}']"));
        assert!(
            p.iter()
                .any(|(_, f, m)| f == "experiment.restore.run[1]" && m.contains("env.NAME")),
            "{p:?}"
        );
    }

    #[test]
    fn without_a_named_scenario_the_file_needs_its_own() {
        let p = problems(&GOOD.replace("  scenario: load.yaml\n", ""));
        assert!(
            p.iter()
                .any(|(_, f, m)| f == "scenarios" && m.contains("no scenarios")),
            "{p:?}"
        );
    }
}

//! Rules of `events:`: when (exactly one of `at`, `at_stage`), one action, an `undo`
//! only with a `duration`, templates only `{{ env.X }}`, and expectations that parse
//! (`during:` as thresholds, `recovers` with its `within`).

use super::validator::Validator;
use crate::events::{parse_recovers, Action, Event, EventHttp};
use crate::model::Config;

impl Validator<'_> {
    pub(super) fn events(&mut self, c: &Config) {
        let mut names: Vec<String> = Vec::new();
        for (i, e) in c.events.iter().enumerate() {
            let at = format!("events[{i}]");
            let name = e.display_name(i);
            if names.contains(&name) {
                self.err(
                    &format!("{at}.name"),
                    format!("two events are named `{name}`"),
                    Some("give each event its own `name:`"),
                );
            }
            names.push(name);
            self.event_when(&at, e, c);
            let actions = [
                e.run.is_some(),
                e.shell.is_some(),
                e.http.is_some(),
                e.mark.is_some(),
            ];
            if actions.iter().filter(|a| **a).count() != 1 {
                self.err(
                    &at,
                    "an event needs exactly one of `run`, `shell`, `http` or `mark`",
                    Some("e.g. `run: [\"docker\", \"restart\", \"db\"]` or `mark: \"deploy\"`"),
                );
            }
            self.action_parts(&at, e.run.as_deref(), e.shell.as_deref(), e.http.as_ref());
            if let Some(u) = &e.undo {
                self.undo(&format!("{at}.undo"), u);
                if e.duration.is_none() {
                    self.err(
                        &format!("{at}.undo"),
                        "`undo` runs when the window ends: it needs a `duration`",
                        Some("add e.g. `duration: 20s`"),
                    );
                }
            }
            if e.duration.is_some_and(|d| d.get().is_zero()) {
                self.err(
                    &format!("{at}.duration"),
                    "duration must be more than 0",
                    None,
                );
            }
            if e.timeout.is_some_and(|d| d.get().is_zero()) {
                self.err(
                    &format!("{at}.timeout"),
                    "timeout must be more than 0",
                    None,
                );
            }
            self.expectations(&at, e);
        }
    }

    fn event_when(&mut self, at: &str, e: &Event, c: &Config) {
        match (e.at, e.at_stage) {
            (Some(_), Some(_)) => self.err(
                at,
                "both `at` and `at_stage`: give one",
                Some("`at: 30s` (from the start) or `at_stage: 2` (when stage 2 starts)"),
            ),
            (None, None) => self.err(
                at,
                "an event needs `at` or `at_stage`",
                Some("`at: 30s` (from the start) or `at_stage: 2` (when stage 2 starts)"),
            ),
            (None, Some(n)) => {
                let scenario = match &e.scenario {
                    Some(s) => c.scenarios.iter().find(|(name, _)| name == s),
                    None => c.scenarios.iter().find(|(_, sc)| sc.stages.is_some()),
                };
                let stages = scenario
                    .and_then(|(_, sc)| sc.stages.as_ref())
                    .map(Vec::len);
                match (scenario, stages) {
                    (None, _) if e.scenario.is_some() => self.err(
                        &format!("{at}.scenario"),
                        format!(
                            "no scenario named `{}`",
                            e.scenario.as_deref().unwrap_or_default()
                        ),
                        None,
                    ),
                    (_, Some(len)) if n >= 1 && (n as usize) <= len => {}
                    (_, Some(len)) => self.err(
                        &format!("{at}.at_stage"),
                        format!(
                            "stage {n} does not exist: the scenario has {len} (counting from 1)"
                        ),
                        None,
                    ),
                    (_, None) => self.err(
                        &format!("{at}.at_stage"),
                        "no scenario with `stages:` to count from",
                        Some("use `at: 30s`, or `at_stage` with a ramping scenario"),
                    ),
                }
            }
            (Some(_), None) => {
                if e.scenario.is_some() {
                    self.err(
                        &format!("{at}.scenario"),
                        "`scenario` goes with `at_stage`",
                        None,
                    );
                }
            }
        }
    }

    fn undo(&mut self, at: &str, u: &Action) {
        if u.timeout.is_some() {
            self.err(
                &format!("{at}.timeout"),
                "an `undo` has its event's `timeout`, not one of its own",
                Some("set `timeout:` on the event: it bounds the action and the undo"),
            );
        }
        self.one_action(at, u, "`undo` needs", None);
        self.action_parts(at, u.run.as_deref(), u.shell.as_deref(), u.http.as_ref());
    }

    /// The rules every [`Action`] keeps (an event's undo, an experiment's apply
    /// and restore): exactly one of `run`, `shell`, `http` (`needs` begins the
    /// message), and a timeout, when given, above 0.
    pub(super) fn one_action(&mut self, at: &str, a: &Action, needs: &str, hint: Option<&str>) {
        if a.kinds_set() != 1 {
            self.err(
                at,
                format!("{needs} exactly one of `run`, `shell` or `http`"),
                hint,
            );
        }
        if a.timeout.is_some_and(|d| d.get().is_zero()) {
            self.err(
                &format!("{at}.timeout"),
                "timeout must be more than 0",
                None,
            );
        }
    }

    pub(super) fn action_parts(
        &mut self,
        at: &str,
        run: Option<&[String]>,
        shell: Option<&str>,
        http: Option<&EventHttp>,
    ) {
        if let Some(argv) = run {
            if argv.first().is_none_or(|p| p.trim().is_empty()) {
                self.err(
                    &format!("{at}.run"),
                    "no program to run",
                    Some("write the program and its arguments, e.g. `run: [\"kill\", \"-STOP\", \"1234\"]`"),
                );
            }
            for (j, a) in argv.iter().enumerate() {
                self.env_only(&format!("{at}.run[{j}]"), a);
            }
        }
        if let Some(s) = shell {
            if s.trim().is_empty() {
                self.err(&format!("{at}.shell"), "empty command line", None);
            }
            self.env_only(&format!("{at}.shell"), s);
        }
        if let Some(h) = http {
            self.env_only(&format!("{at}.http.url"), &h.url);
            if let Some(b) = &h.body {
                self.env_only(&format!("{at}.http.body"), b);
            }
            if h.body.is_some() && h.json.is_some() {
                self.err(
                    &format!("{at}.http"),
                    "both `body` and `json`: give one",
                    None,
                );
            }
            for (k, v) in &h.headers {
                self.env_only(&format!("{at}.http.headers.{k}"), v);
            }
            if let Some(m) = &h.method {
                if m.is_empty() || !m.bytes().all(|b| b.is_ascii_alphabetic()) {
                    self.err(
                        &format!("{at}.http.method"),
                        format!("`{m}` is not an HTTP method"),
                        None,
                    );
                }
            }
        }
    }

    pub(super) fn env_only(&mut self, field: &str, text: &str) {
        use crate::template::{Expr, Segment};
        match crate::template::parse_template(text) {
            Ok(t) => {
                let ok = t
                    .segments
                    .iter()
                    .all(|s| matches!(s, Segment::Lit(_) | Segment::Expr(Expr::Env(_))));
                if !ok {
                    self.err(
                        field,
                        "only `{{ env.NAME }}` templates may be used in events",
                        Some("events run beside the load, outside any VU: no feeds or variables"),
                    );
                }
            }
            Err(e) => self.err(field, e.to_string(), None),
        }
    }

    fn expectations(&mut self, at: &str, e: &Event) {
        if !e.during.is_empty() && e.duration.is_none() {
            self.err(
                &format!("{at}.during"),
                "`during` judges the fault's window: the event needs a `duration`",
                Some("add e.g. `duration: 20s`, or use `after:` for a point event"),
            );
        }
        for (metric, exprs) in &e.during {
            for x in exprs.list() {
                match crate::thresholds::parse(metric, &x) {
                    Err(err) => self.err(
                        &format!("{at}.during.{metric}"),
                        format!("`{x}`: {err}"),
                        None,
                    ),
                    Ok(t) if t.scope.is_some() => self.err(
                        &format!("{at}.during.{metric}"),
                        format!("`{x}`: `during:` is judged over the event's own window, so it takes no `stage:` or `window:`"),
                        Some("put a threshold scoped to a stage or window under `thresholds:`"),
                    ),
                    Ok(_) => {}
                }
            }
        }
        if let Some(a) = &e.after {
            if let Some(r) = &a.recovers {
                for x in r.list() {
                    if let Err(err) = parse_recovers(&x) {
                        self.err(&format!("{at}.after.recovers"), err.to_string(), None);
                    }
                }
            }
            if a.hold.is_some_and(|d| d.get().as_secs_f64() < 1.0) {
                self.err(
                    &format!("{at}.after.hold"),
                    "hold is judged in whole seconds: at least 1s",
                    None,
                );
            }
            if a.recovers.is_none() && a.no_errors_after.is_none() {
                self.err(
                    &format!("{at}.after"),
                    "nothing expected: give `recovers` or `no_errors_after`",
                    None,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    const LOAD: &str = "target: http://127.0.0.1:8080\nscenarios:\n  s:\n    executor: ramping-vus\n    stages: [{duration: 5s, target: 2}, {duration: 5s, target: 2}]\n    flow: [{request: \"GET /\"}]\n";

    fn problems(events: &str) -> Vec<(Option<usize>, String, String)> {
        match crate::parse_str(&format!("{LOAD}events:\n{events}"), "t.yaml") {
            Ok(_) => Vec::new(),
            Err(crate::ScenarioError::Invalid(d)) => d
                .into_iter()
                .map(|d| (d.line, d.field, d.message))
                .collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_complete_event_is_valid() {
        let p = problems(
            "  - name: burst\n    at_stage: 2\n    http: { method: POST, url: /admin/faults, json: { error_rate: 0.3 } }\n    duration: 5s\n    undo: { shell: \"echo {{ env.HOME }}\" }\n    timeout: 2s\n    required: false\n    during:\n      http_req_failed: \"rate > 0.1\"\n      \"http_req_failed{step:checkout}\": [\"rate > 0.5\"]\n    after: { recovers: \"p(95) < 200 within 30s\", hold: 3s, no_errors_after: 10s }\n  - { at: 1s, mark: deploy, after: { no_errors_after: 0s } }\n",
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn problems_name_line_and_field() {
        let p = problems(
            "  - at: 1s\n    at_stage: 3\n    run: []\n    undo: { run: [\"x\"] }\n    during: { http_req_failed: \"rate <<< 1\" }\n    after: { recovers: \"p(95) < 200\" }\n  - { at: 2s, shell: \"x {{ token }}\", mark: m }\n  - { at_stage: 9, mark: late }\n",
        );
        let has = |field: &str, words: &str| {
            assert!(
                p.iter().any(|(_, f, m)| f == field && m.contains(words)),
                "{field}: {words} not in {p:#?}"
            );
        };
        has("events[0]", "both `at` and `at_stage`");
        has("events[0].run", "no program");
        has("events[0].undo", "needs a `duration`");
        has("events[0].during", "needs a `duration`");
        has("events[0].during.http_req_failed", "rate <<< 1");
        has("events[0].after.recovers", "within");
        has("events[1]", "exactly one of");
        has("events[1].shell", "only `{{ env.NAME }}`");
        has("events[2].at_stage", "stage 9 does not exist");
        let line = p.iter().find(|(_, f, _)| f == "events[0].run").unwrap().0;
        assert_eq!(line, Some(10), "{p:?}");
    }

    #[test]
    fn an_undo_is_one_action_bounded_by_its_events_timeout() {
        // The undo is the same `Action` as an experiment's apply, but its deadline
        // is the event's: one of its own is refused, saying where to put it.
        let p = problems(
            "  - { at: 1s, run: [\"true\"], duration: 2s, undo: { run: [\"true\"], timeout: 5s } }\n  - { at: 1s, run: [\"true\"], duration: 2s, undo: { run: [\"true\"], shell: \"true\" } }\n",
        );
        assert!(
            p.iter()
                .any(|(_, f, m)| f == "events[0].undo.timeout"
                    && m.contains("its event's `timeout`")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|(_, f, m)| f == "events[1].undo"
                && m == "`undo` needs exactly one of `run`, `shell` or `http`"),
            "{p:?}"
        );
        assert_eq!(p.len(), 2, "{p:?}");
    }

    #[test]
    fn unknown_fields_are_refused() {
        let p = problems("  - { at: 1s, mark: m, dureation: 5s }\n");
        assert!(p.iter().any(|(_, _, m)| m.contains("dureation")), "{p:?}");
    }
}

//! An experiment's `apply:` and `restore:` actions (and `ready:`'s command), with the
//! knob's value put in: the events' own command runner and HTTP call
//! (`pado_engine::events`), so an action is framed, bounded and killed exactly as an
//! event's is. `{{ value }}` is replaced by the value's text (digits only: it cannot
//! run anything in a shell line); `{{ env.X }}` is rendered as events render it, its
//! values masked in what is kept.

use std::time::Duration;

use pado_engine::events::command::{run_command, TAIL_BYTES};
use pado_engine::events::http_call::HttpCall;
use pado_engine::events::shell_quote::render_shell_line;
use pado_engine::redact::Redactor;
use pado_scenario::events::EventHttp;
use pado_scenario::experiment::{fill_value, is_value_hole, Action, DEFAULT_ACTION_TIMEOUT};

/// How an action ended.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ActionOutcome {
    /// Whether it did what it should (exit 0, or a 2xx answer).
    pub ok: bool,
    /// What ran, in words (`run: kubectl scale …`, `http: POST http://…`).
    pub what: String,
    /// How it ended (`exit 0`, `status 200`, `timed out after 60s`).
    pub result: String,
    /// The end of its output (stdout then stderr, or the answer's body), secrets
    /// masked.
    #[serde(skip)]
    pub output: String,
}

/// The environment values `text` renders, to be masked in what is kept.
fn env_secrets(text: &str, out: &mut Vec<Vec<u8>>) {
    use pado_scenario::template::{parse_template, Expr, Segment};
    if let Ok(t) = parse_template(text) {
        for s in &t.segments {
            if let Segment::Expr(Expr::Env(n)) = s {
                if let Ok(v) = std::env::var(n) {
                    out.push(v.into_bytes());
                }
            }
        }
    }
}

/// `text` with the value in and `{{ env.X }}` rendered.
fn render(text: &str, value: &str, secrets: &mut Vec<Vec<u8>>) -> Result<String, String> {
    let filled = fill_value(text, value);
    env_secrets(&filled, secrets);
    pado_scenario::template::render_env_only(&filled)
}

/// A `json:` body with each string that is exactly `{{ value }}` made the number
/// (`{"pool_size": "{{ value }}"}` sends `{"pool_size": 4}`), and the value filled
/// into other strings.
fn json_with_value(j: &serde_json::Value, v: f64, text: &str) -> serde_json::Value {
    use serde_json::Value;
    match j {
        Value::String(s) if is_value_hole(s) => serde_json::Number::from_f64(v)
            .map(|n| {
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    Value::from(v as i64)
                } else {
                    Value::Number(n)
                }
            })
            .unwrap_or(Value::Null),
        Value::String(s) => Value::String(fill_value(s, text)),
        Value::Array(a) => Value::Array(a.iter().map(|x| json_with_value(x, v, text)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), json_with_value(x, v, text)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The HTTP call an action makes, resolved: the URL joined to `target` when it is a
/// path, the value and the environment in.
pub(crate) fn http_call(
    h: &EventHttp,
    value: f64,
    target: Option<&str>,
    secrets: &mut Vec<Vec<u8>>,
) -> Result<HttpCall, String> {
    let text = pado_scenario::experiment::value_text(value);
    let raw = render(&h.url, &text, secrets)?;
    let url = match url::Url::parse(&raw) {
        Ok(u) => u,
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            let base =
                target.ok_or_else(|| format!("`{}` is a path and there is no `target`", h.url))?;
            url::Url::parse(base)
                .and_then(|b| b.join(&raw))
                .map_err(|e| e.to_string())?
        }
        Err(e) => return Err(format!("`{}`: {e}", h.url)),
    };
    let mut headers = Vec::new();
    for (k, v) in &h.headers {
        let v = render(v, &text, secrets)?;
        secrets.push(v.clone().into_bytes());
        headers.push((k.clone(), v));
    }
    let body = match (&h.body, &h.json) {
        (Some(b), _) => render(b, &text, secrets)?.into_bytes(),
        (None, Some(j)) => {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("Content-Type".into(), "application/json".into()));
            }
            serde_json::to_vec(&json_with_value(j, value, &text)).unwrap_or_default()
        }
        (None, None) => Vec::new(),
    };
    let method = h
        .method
        .as_deref()
        .map(str::to_ascii_uppercase)
        .unwrap_or_else(|| if body.is_empty() { "GET" } else { "POST" }.into());
    Ok(HttpCall {
        method,
        url,
        headers,
        body,
    })
}

/// The argv a `run:` or `shell:` runs, the value and the environment in.
pub(crate) fn argv(
    run: Option<&[String]>,
    shell: Option<&str>,
    value: f64,
    secrets: &mut Vec<Vec<u8>>,
) -> Result<Option<Vec<String>>, String> {
    let text = pado_scenario::experiment::value_text(value);
    if let Some(run) = run {
        return run
            .iter()
            .map(|a| render(a, &text, secrets))
            .collect::<Result<Vec<_>, _>>()
            .map(Some);
    }
    if let Some(line) = shell {
        let filled = fill_value(line, &text);
        env_secrets(&filled, secrets);
        let line = render_shell_line(&filled)?;
        return Ok(Some(vec!["sh".into(), "-c".into(), line]));
    }
    Ok(None)
}

/// Runs `a` with the knob at `value`, bounded by its timeout.
pub fn perform(a: &Action, value: f64, target: Option<&str>) -> ActionOutcome {
    let timeout = a.timeout.map_or(DEFAULT_ACTION_TIMEOUT, |d| d.get());
    let mut secrets = Vec::new();
    if let Some(h) = &a.http {
        return match http_call(h, value, target, &mut secrets) {
            Ok(call) => send(&call, timeout, None, &Redactor::new(secrets)),
            Err(e) => failed("http", e),
        };
    }
    match argv(a.run.as_deref(), a.shell.as_deref(), value, &mut secrets) {
        Ok(Some(argv)) => command(&argv, timeout, &Redactor::new(secrets)),
        Ok(None) => failed("action", "nothing to run".into()),
        Err(e) => failed("command", e),
    }
}

fn failed(what: &str, e: String) -> ActionOutcome {
    ActionOutcome {
        ok: false,
        what: what.into(),
        result: e,
        output: String::new(),
    }
}

/// Sends `call`; ok when the answer's status is `want` (any 2xx when `None`).
pub(crate) fn send(
    call: &HttpCall,
    timeout: Duration,
    want: Option<u16>,
    redactor: &Redactor,
) -> ActionOutcome {
    let redactor = redactor.with(call.credentials());
    let r = call.send(timeout);
    let ok = match want {
        Some(w) => r.status == w,
        None => (200..300).contains(&r.status),
    };
    ActionOutcome {
        ok,
        what: format!("http: {} {}", call.method, call.url),
        result: match &r.error {
            Some(e) => format!("no answer ({e})"),
            None => format!("status {}", r.status),
        },
        output: redactor.text(&redactor.prefix(&r.body, TAIL_BYTES)),
    }
}

/// Runs `argv`; ok on exit 0.
pub(crate) fn command(argv: &[String], timeout: Duration, redactor: &Redactor) -> ActionOutcome {
    let r = run_command(argv, TAIL_BYTES + redactor.longest(), timeout, None);
    let result = if let Some(e) = &r.spawn_error {
        e.clone()
    } else if r.timed_out {
        format!(
            "timed out after {}",
            pado_base::units::duration(timeout.as_secs_f64())
        )
    } else {
        match r.exit_code {
            Some(c) => format!("exit {c}"),
            None => "killed by a signal".into(),
        }
    };
    let mut output = redactor.text(&r.stdout);
    let err = redactor.text(&r.stderr);
    if !err.is_empty() {
        output.push_str(&err);
    }
    ActionOutcome {
        ok: r.exit_code == Some(0),
        what: redactor.text(format!("run: {}", argv.join(" ")).as_bytes()),
        result,
        output,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_value_hole_becomes_the_number_and_text_holes_the_text() {
        let j = serde_json::json!({"pool_size": "{{ value }}", "note": "n={{value}}", "k": [1, "{{ value }}"]});
        assert_eq!(
            json_with_value(&j, 4.0, "4"),
            serde_json::json!({"pool_size": 4, "note": "n=4", "k": [1, 4]})
        );
        assert_eq!(
            json_with_value(&serde_json::json!("{{ value }}"), 0.5, "0.5"),
            serde_json::json!(0.5)
        );
    }

    #[test]
    fn a_shell_action_gets_the_value_and_reports_its_exit() {
        let a = Action {
            shell: Some("printf 'v=%s' {{ value }}; exit 3".into()),
            ..Default::default()
        };
        let o = perform(&a, 7.0, None);
        assert!(!o.ok);
        assert_eq!(o.result, "exit 3");
        assert_eq!(o.output, "v=7");
        let a = Action {
            run: Some(vec!["printf".into(), "%s".into(), "{{ value }}".into()]),
            ..Default::default()
        };
        let o = perform(&a, 2.5, None);
        assert!(o.ok, "{o:?}");
        assert_eq!(o.output, "2.5");
    }

    #[test]
    fn a_command_past_its_timeout_fails_saying_so() {
        let a = Action {
            run: Some(vec!["sleep".into(), "5".into()]),
            timeout: Some(pado_scenario::Dur(Duration::from_millis(200))),
            ..Default::default()
        };
        let o = perform(&a, 1.0, None);
        assert!(!o.ok && o.result.starts_with("timed out"), "{o:?}");
    }
}

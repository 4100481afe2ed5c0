//! An experiment's `apply:` and `restore:` actions (and `ready:`'s command), with the
//! knob's value put in: the events' own renderer, command runner and HTTP call
//! (`pado_engine::events`), so an action is resolved, framed, bounded and killed
//! exactly as an event's is. `{{ value }}` is replaced by the value's text (digits only: it cannot
//! run anything in a shell line); `{{ env.X }}` is rendered as events render it, its
//! values masked in what is kept.

use std::time::Duration;

use pado_engine::events::command::{run_command, TAIL_BYTES};
use pado_engine::events::http_call::HttpCall;
use pado_engine::events::render::ActionRenderer;
use pado_engine::redact::Redactor;
use pado_scenario::events::EventHttp;
use pado_scenario::experiment::{Action, DEFAULT_ACTION_TIMEOUT};

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

/// The HTTP call an action makes, resolved: the URL joined to `target` when it is a
/// path, the value and the environment in. Header values are masked in what is
/// kept, as an experiment's are.
pub(crate) fn http_call(
    h: &EventHttp,
    value: f64,
    target: Option<&str>,
    secrets: &mut Vec<Vec<u8>>,
) -> Result<HttpCall, String> {
    let call = ActionRenderer::new(Some(value), secrets)
        .http("http", h, target)
        .map_err(|e| e.message)?;
    for (k, v) in &call.headers {
        if h.headers.contains_key(k) {
            secrets.push(v.clone().into_bytes());
        }
    }
    Ok(call)
}

/// The argv a `run:` or `shell:` runs, the value and the environment in.
pub(crate) fn argv(
    run: Option<&[String]>,
    shell: Option<&str>,
    value: f64,
    secrets: &mut Vec<Vec<u8>>,
) -> Result<Option<Vec<String>>, String> {
    ActionRenderer::new(Some(value), secrets)
        .argv("action", run, shell)
        .map(|a| a.map(|(_, argv)| argv))
        .map_err(|e| e.message)
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

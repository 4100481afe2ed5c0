//! Fault windows that must outlive the pado that opened them: the hook a run gives
//! the event runner to keep a record of each open window ([`WindowLedger`]), and
//! what a later pado needs to run the undo of a window a killed run left open —
//! the undo rendered again from the scenario's text and today's environment
//! ([`resolve_undo`]), then run with the same process group, parent-death signal,
//! timeout and masking as any event's undo ([`run_undo`]).

use std::time::{Duration, Instant};

use pado_results::events::ActionRecord;
use pado_scenario::events::{Action as UndoSource, EventHttp};
use pado_scenario::template::{parse_template, Expr, Segment};

use super::{action, perform, Action, EventError, EventSpec};
use crate::redact::Redactor;

/// Told when a fault window with an undo opens (before its action starts) and when
/// its undo has run, from the event's own thread. The run's implementation writes
/// the window down where a later pado finds it should this one be killed between
/// the two calls.
pub trait WindowLedger: Send + Sync {
    /// The window of `event` opens: its action starts `started_ms` after second 0.
    fn opened(&self, event: &EventSpec, started_ms: u64);
    /// The undo of `event` has run (whatever its outcome): the window is closed.
    fn closed(&self, event: &EventSpec);
}

/// The environment variables (`{{ env.NAME }}`) an undo reads, by name, in order of
/// first use: what its record keeps instead of their values.
pub fn env_names(a: &UndoSource) -> Vec<String> {
    let mut texts: Vec<&str> = Vec::new();
    if let Some(argv) = &a.run {
        texts.extend(argv.iter().map(String::as_str));
    }
    if let Some(line) = &a.shell {
        texts.push(line);
    }
    if let Some(EventHttp {
        url, body, headers, ..
    }) = &a.http
    {
        texts.push(url);
        if let Some(b) = body {
            texts.push(b);
        }
        texts.extend(headers.values().map(String::as_str));
    }
    let mut names: Vec<String> = Vec::new();
    for t in texts.into_iter().filter(|t| t.contains("{{")) {
        let Ok(parsed) = parse_template(t) else {
            continue;
        };
        for seg in &parsed.segments {
            if let Segment::Expr(Expr::Env(n)) = seg {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
    }
    names
}

/// An undo ready to run again: its kind, the action rendered from today's
/// environment, and the values to mask in what it prints.
#[derive(Debug)]
pub struct ResolvedUndo {
    /// `run`, `shell` or `http`.
    pub kind: String,
    /// The action.
    pub action: Action,
    /// The environment's values the undo used.
    pub redactor: Redactor,
}

/// Renders an undo kept as the scenario wrote it (`source`, its `undo:` mapping)
/// with today's environment, `target` joining a relative URL. A variable no longer
/// set, or a source that is not an undo, is an error naming `field`: nothing runs.
pub fn resolve_undo(
    source: &serde_json::Value,
    target: Option<&str>,
    field: &str,
) -> Result<ResolvedUndo, EventError> {
    let undo: UndoSource = serde_json::from_value(source.clone()).map_err(|e| EventError {
        field: field.into(),
        message: format!("not an undo pado wrote: {e}"),
    })?;
    let mut secrets = Vec::new();
    let resolved = action(
        field,
        undo.run.as_deref(),
        undo.shell.as_deref(),
        undo.http.as_ref(),
        target,
        &mut secrets,
    )?;
    let Some((kind, action)) = resolved else {
        return Err(EventError {
            field: field.into(),
            message: "the undo has no `run`, `shell` or `http`".into(),
        });
    };
    Ok(ResolvedUndo {
        kind,
        action,
        redactor: Redactor::new(secrets),
    })
}

/// Runs a resolved undo now, bounded by `timeout` (a command in a process group of
/// its own, killed with it at the deadline; a call given up), its outputs masked
/// and cut as a run's are. Times are ms from the call.
pub fn run_undo(undo: &ResolvedUndo, timeout: Duration) -> ActionRecord {
    perform(
        &undo.redactor,
        Instant::now(),
        &undo.kind,
        &undo.action,
        timeout,
        None,
    )
}

#[cfg(test)]
mod tests {
    use pado_results::events::Outcome;

    use super::*;

    fn undo(v: serde_json::Value) -> UndoSource {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn env_names_are_the_undos_variables_once_each() {
        let a = undo(serde_json::json!({
            "shell": "rm -f {{ env.PADO_T_MARK }} {{ env.PADO_T_MARK }}; echo {{ env.PADO_T_OTHER }}"
        }));
        assert_eq!(env_names(&a), ["PADO_T_MARK", "PADO_T_OTHER"]);
        let a = undo(serde_json::json!({ "http": {
            "url": "/x/{{ env.PADO_T_A }}",
            "headers": { "Authorization": "Bearer {{ env.PADO_T_TOKEN }}" }
        }}));
        assert_eq!(env_names(&a), ["PADO_T_A", "PADO_T_TOKEN"]);
        assert!(env_names(&undo(serde_json::json!({ "run": ["true"] }))).is_empty());
    }

    #[test]
    fn an_undo_is_rendered_from_todays_environment_and_its_values_masked() {
        std::env::set_var("PADO_T_UNDO_SECRET", "s3cr3t-값");
        let src = serde_json::json!({ "shell": "echo {{ env.PADO_T_UNDO_SECRET }}; exit 3" });
        let u = resolve_undo(&src, None, "events[0].undo").unwrap();
        assert_eq!(u.kind, "shell");
        let r = run_undo(&u, Duration::from_secs(10));
        assert_eq!((r.outcome, r.exit_code), (Outcome::Failed, Some(3)));
        assert_eq!(r.stdout, "***\n");
        // Not set today: nothing runs, the variable is named.
        let src = serde_json::json!({ "run": ["touch", "{{ env.PADO_T_UNSET_9 }}"] });
        let e = resolve_undo(&src, None, "events[2].undo").unwrap_err();
        assert_eq!(e.field, "events[2].undo.run[1]");
        assert!(e.message.contains("PADO_T_UNSET_9"), "{e}");
        // Something else than an undo.
        let e = resolve_undo(&serde_json::json!({"rm": "-rf"}), None, "f").unwrap_err();
        assert!(e.message.contains("not an undo"), "{e}");
    }

    #[test]
    fn a_hanging_undo_is_killed_at_its_timeout() {
        let src = serde_json::json!({ "run": ["sleep", "30"] });
        let u = resolve_undo(&src, None, "u").unwrap();
        let t = Instant::now();
        let r = run_undo(&u, Duration::from_millis(300));
        assert_eq!(r.outcome, Outcome::Timeout);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}

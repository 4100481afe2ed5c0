//! `POST /api/control` once its head has passed the gate: the command read,
//! applied to the run, and kept as an event of the page.

use pado_h1server::Request;
use pado_session::ControlCommand;
use serde_json::json;

use crate::server::{Answer, Shared};
use crate::store::EventNow;

/// Apply a control call's command and record it.
pub(crate) fn control(req: &Request, s: &Shared) -> Answer {
    let Ok(text) = std::str::from_utf8(&req.body) else {
        return Answer::error_text(400, "the body is not UTF-8 JSON");
    };
    let cmd = match ControlCommand::from_json(text) {
        Ok(c) => c,
        Err(e) => return Answer::error_text(400, e.to_string()),
    };
    if let Err(e) = s.run.apply(&cmd) {
        return Answer::error_text(409, e.to_string());
    }
    let t_s = s.run.state().elapsed.as_secs_f64();
    pado_base::lock(&s.store).add_event(EventNow {
        t_s: (t_s * 10.0).round() / 10.0,
        kind: pado_session::CONTROL_KIND.into(),
        what: describe(&cmd),
    });
    s.changed();
    Answer::json_value(
        200,
        &json!({"ok": true, "state": crate::state::state_json(s)}),
    )
}

/// A command in words, as the timeline of the page shows it.
fn describe(cmd: &ControlCommand) -> String {
    let ramp = |r: f64| {
        if r > 0.0 {
            format!(" over {r} s")
        } else {
            String::new()
        }
    };
    match cmd {
        ControlCommand::Pause => "paused".into(),
        ControlCommand::Resume => "resumed".into(),
        ControlCommand::SetVus { vus, ramp_s } => format!("VUs → {vus}{}", ramp(*ramp_s)),
        ControlCommand::SetSegmentVus {
            test_to, ramp_s, ..
        } => format!("VUs → {test_to}{}", ramp(*ramp_s)),
        ControlCommand::SetRate { per_s, ramp_s } => {
            format!("arrival rate → {per_s}/s{}", ramp(*ramp_s))
        }
        ControlCommand::SetRateFactor { factor, ramp_s } => {
            format!("arrival rate → ×{factor}{}", ramp(*ramp_s))
        }
        ControlCommand::NextStage => "next stage".into(),
        ControlCommand::Hold { seconds } => format!("hold {seconds} s more"),
        ControlCommand::Stop => "stopped".into(),
    }
}

//! WebSocket steps compiled: the handshake is an HTTP GET built like any request
//! (URL joined to `target`, templates, `defaults.headers`, secrets collected), its
//! actions numbered and bound: messages as templates, each `expect` one check.

use std::time::Duration;

use pado_scenario::{ExtractFrom, ExtractSpec, RequestFull, RequestSpec, WsAction, WsSpec};

use crate::render::{Compiled, Escape};

use super::builder::Builder;
use super::checks::{json_path, regex};
use super::*;

/// Default deadline of a handshake and of each `expect`.
pub const WS_DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A compiled `ws:` step.
#[derive(Debug)]
pub struct WsPlan {
    /// The upgrade request as an HTTP GET to the `http(s)` origin (`ws` → `http`,
    /// `wss` → `https`): its origin and head bytes (static or rendered per session).
    pub handshake: RequestPlan,
    /// The URL as written, for debug output.
    pub url: String,
    /// Deadline of the handshake.
    pub timeout: Duration,
    /// What the session does, in order.
    pub actions: Vec<WsActionPlan>,
}

/// One compiled action.
#[derive(Debug)]
pub enum WsActionPlan {
    /// Send a text message `count` times, `every` apart.
    Send {
        /// The message.
        text: Compiled,
        /// Time between messages (only with `count` > 1).
        every: Duration,
        /// Messages in all.
        count: u32,
    },
    /// Wait for a message matching every condition.
    Expect {
        /// The check this expect counts as.
        check: u32,
        /// Its conditions (their own ids are the expect's).
        conditions: Vec<CheckPlan>,
        /// Values to take from the matched message.
        extract: Vec<ExtractPlan>,
        /// How long to wait.
        timeout: Duration,
    },
    /// Receive for this long.
    Hold(Duration),
    /// Close now.
    Close,
}

/// `ws://` → `http://`, `wss://` → `https://` (paths stay as they are): the
/// handshake is an HTTP request to that origin.
fn http_url(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("ws://") {
        format!("http://{rest}")
    } else if let Some(rest) = url.strip_prefix("wss://") {
        format!("https://{rest}")
    } else {
        url.to_string()
    }
}

impl Builder<'_> {
    pub(super) fn websocket(
        &mut self,
        p: &str,
        step: &str,
        ws: &WsSpec,
    ) -> Result<WsPlan, PlanError> {
        let timeout = ws.timeout.map_or(WS_DEFAULT_TIMEOUT, |t| t.get());
        let spec = RequestSpec::Full(RequestFull {
            method: Some("GET".into()),
            url: http_url(&ws.url),
            headers: ws.headers.clone(),
            timeout: Some(pado_scenario::Dur(timeout)),
            follow_redirects: Some(false),
            ..Default::default()
        });
        let (handshake, _, _) = self.request(p, &spec)?;
        let mut actions = Vec::new();
        for (i, a) in ws.actions.iter().enumerate() {
            let ap = format!("{p}.actions[{i}]");
            actions.push(self.ws_action(&ap, step, a, timeout)?);
        }
        Ok(WsPlan {
            handshake,
            url: ws.url.clone(),
            timeout,
            actions,
        })
    }

    fn ws_action(
        &mut self,
        ap: &str,
        step: &str,
        a: &WsAction,
        timeout: Duration,
    ) -> Result<WsActionPlan, PlanError> {
        if let Some(text) = &a.send {
            let text = self.compile_text(&format!("{ap}.send"), text, Escape::Raw, |l| {
                l.as_bytes().to_vec()
            })?;
            return Ok(WsActionPlan::Send {
                text,
                every: a.every.map(|d| d.get()).unwrap_or_default(),
                count: a.count.unwrap_or(1).max(1),
            });
        }
        if let Some(d) = a.hold {
            return Ok(WsActionPlan::Hold(d.get()));
        }
        let Some(x) = &a.expect else {
            return Ok(WsActionPlan::Close);
        };
        let ep = format!("{ap}.expect");
        let mut words = Vec::new();
        if let Some(n) = &x.body_contains {
            words.push(format!("contains {n:?}"));
        }
        if let Some(r) = &x.body_matches {
            words.push(format!("matches /{r}/"));
        }
        for (path, v) in &x.json {
            words.push(format!("{path} == {v}"));
        }
        for path in &x.json_exists {
            words.push(format!("{path} exists"));
        }
        if words.is_empty() {
            words.push("arrives".into());
        }
        let check = self.check_id(format!("{step}: message {}", words.join(", ")));
        let mut conditions = Vec::new();
        if let Some(n) = &x.body_contains {
            conditions.push(if n.contains("{{") {
                self.templated_check(
                    &format!("{ep}.body_contains"),
                    check,
                    n,
                    TemplatedCheck::BodyContains,
                )?
            } else {
                CheckPlan::BodyContains {
                    id: check,
                    needle: n.as_bytes().into(),
                }
            });
        }
        if let Some(r) = &x.body_matches {
            conditions.push(CheckPlan::BodyMatches {
                id: check,
                re: regex(&format!("{ep}.body_matches"), r)?,
            });
        }
        for (path, expected) in &x.json {
            let jp = json_path(&format!("{ep}.json"), path)?;
            conditions.push(match expected.as_str().filter(|t| t.contains("{{")) {
                Some(t) => self.templated_check(
                    &format!("{ep}.json.{path}"),
                    check,
                    t,
                    TemplatedCheck::JsonEquals(jp),
                )?,
                None => CheckPlan::JsonEquals {
                    id: check,
                    path: jp,
                    expected: expected.clone(),
                },
            });
        }
        for path in &x.json_exists {
            conditions.push(CheckPlan::JsonExists {
                id: check,
                path: json_path(&format!("{ep}.json_exists"), path)?,
            });
        }
        let mut extract = Vec::new();
        for (var, spec) in &a.extract {
            let field = format!("{ap}.extract.{var}");
            let source = match spec {
                ExtractSpec::Path(path) | ExtractSpec::From(ExtractFrom::Json(path)) => {
                    ExtractSource::Json(json_path(&field, path)?)
                }
                ExtractSpec::From(ExtractFrom::Regex(r)) => ExtractSource::Regex(regex(&field, r)?),
                // Validation refuses these for messages.
                ExtractSpec::From(ExtractFrom::Header(h) | ExtractFrom::Cookie(h)) => {
                    return Err(PlanError::Pattern {
                        field,
                        message: format!("a WebSocket message has no header or cookie `{h}`"),
                    })
                }
            };
            let var = self.var_id(var);
            extract.push(ExtractPlan { var, source });
        }
        Ok(WsActionPlan::Expect {
            check,
            conditions,
            extract,
            timeout: x.timeout.map_or(timeout, |t| t.get()),
        })
    }
}

//! `sse:` compiled: the stop conditions as bytes to compare with each event, for
//! an LLM stream the JSONPaths of the token text and of the server's count of
//! output tokens, and the checks and extractions judged on each event, parsed
//! once.

use std::sync::Arc;
use std::time::Duration;

use pado_scenario::{SseCheck, SseEventPick, SseExtractFull, SseExtractSpec, SseSpec};

use crate::json_query::path_set::PathSet;
use crate::json_query::JsonQuery;
use crate::render::Escape;

use super::builder::Builder;
use super::checks::{json_path, regex};
use super::{CheckPlan, ExtractSource, PlanError};

/// Most checks on events one step has: a stream's failures are one bit each.
pub const MAX_EVENT_CHECKS: usize = 64;

/// A check judged on every event of a stream, counted once per stream.
#[derive(Debug)]
pub struct SseCheckPlan {
    /// Check id (its name is in the plan's checks).
    pub id: u32,
    /// Only events of this type are judged (`None`: every event).
    pub event: Option<Box<[u8]>>,
    /// What an event must satisfy.
    pub test: EventTest,
}

/// What a check on events asks of one event.
#[derive(Debug)]
pub enum EventTest {
    /// Its data is JSON.
    JsonValid,
    /// Its type is none of these.
    NoEvent(Vec<Box<[u8]>>),
    /// A step's body check, read on the event's data.
    Data(CheckPlan),
}

/// A value taken from a stream's events into a variable.
#[derive(Debug)]
pub struct SseExtractPlan {
    /// Variable id.
    pub var: usize,
    /// Where in an event's data (JSONPath or regular expression).
    pub source: ExtractSource,
    /// Only events of this type.
    pub event: Option<Box<[u8]>>,
    /// The last event that holds a value gives it (else the first).
    pub last: bool,
}

/// OpenAI's chat completions put a token's text here...
const CHAT_TOKEN: &str = "$.choices[0].delta.content";
/// ...and its (legacy) completions here.
const COMPLETION_TOKEN: &str = "$.choices[0].text";
/// Where `stream_options: {include_usage: true}` puts the count of output tokens.
const USAGE: &str = "$.usage.completion_tokens";

/// How a step's event stream is read (shared by the VUs of every worker).
#[derive(Debug)]
pub struct SsePlan {
    /// Stop at the event whose data is exactly this.
    pub until: Option<Box<[u8]>>,
    /// Stop at the first event of this type.
    pub until_event: Option<Box<[u8]>>,
    /// Stop after this many events.
    pub count: Option<u64>,
    /// Stop reading this long after the request was sent.
    pub max_time: Option<Duration>,
    /// The events are an LLM's tokens.
    pub llm: Option<LlmPlan>,
    /// Checks judged on every event (the stop event excluded).
    pub checks: Vec<SseCheckPlan>,
    /// Whether a failed check on events fails the request.
    pub checks_fail_request: bool,
    /// Values taken from the events.
    pub extract: Vec<SseExtractPlan>,
    /// How the request's prompt is sized (`sse.prompt`).
    pub prompt: Option<crate::prompt::PromptPlan>,
}

/// Where an LLM stream's events hold their token and the count of tokens.
#[derive(Debug)]
pub struct LlmPlan {
    /// The token text: the first path that holds a string wins.
    pub token: Vec<JsonQuery>,
    /// The server's own count of output tokens (replaces the count of events).
    pub usage: JsonQuery,
    /// `token`'s paths then `usage`, walked together in one pass of each event's
    /// data, when all are simple paths (OpenAI's are); `None` sends each event
    /// through the general queries.
    pub one_walk: Option<PathSet>,
}

impl LlmPlan {
    /// The plan of `token` paths and the `usage` path.
    pub fn new(token: Vec<JsonQuery>, usage: JsonQuery) -> LlmPlan {
        let all: Vec<&JsonQuery> = token.iter().chain([&usage]).collect();
        let one_walk = PathSet::new(&all);
        LlmPlan {
            token,
            usage,
            one_walk,
        }
    }
}

/// Compiles a step's `sse:` at field `p`.
fn compile(p: &str, s: &SseSpec) -> Result<SsePlan, PlanError> {
    let query = |field: &str, text: &str| {
        JsonQuery::parse(text).map_err(|e| PlanError::Pattern {
            field: format!("{p}.{field}"),
            message: format!("`{text}` is not a JSONPath: {e}"),
        })
    };
    let llm = if s.llm {
        let token = match &s.token_path {
            Some(t) => vec![query("token_path", t)?],
            None => vec![
                query("token_path", CHAT_TOKEN)?,
                query("token_path", COMPLETION_TOKEN)?,
            ],
        };
        let usage = query("usage_path", s.usage_path.as_deref().unwrap_or(USAGE))?;
        Some(LlmPlan::new(token, usage))
    } else {
        None
    };
    Ok(SsePlan {
        until: s.until.as_ref().map(|u| u.as_bytes().into()),
        until_event: s.until_event.as_ref().map(|u| u.as_bytes().into()),
        count: s.count,
        max_time: s.max_time.map(|t| t.get()),
        llm,
        checks: Vec::new(),
        checks_fail_request: true,
        extract: Vec::new(),
        prompt: None,
    })
}

impl Builder<'_> {
    /// A step's `sse:` (at field `p`, of step `step`): [`compile`], then its checks
    /// and extractions on events, numbered and parsed.
    pub(super) fn sse_plan(
        &mut self,
        p: &str,
        step: &str,
        s: &SseSpec,
    ) -> Result<Arc<SsePlan>, PlanError> {
        let mut inner = compile(p, s)?;
        if let Some(c) = &s.check {
            inner.checks = self.event_checks(&format!("{p}.check"), step, c)?;
            inner.checks_fail_request = c.fail_request.unwrap_or(true);
        }
        if let Some(pr) = &s.prompt {
            let text = match &pr.text {
                Some(t) => Some(self.compile_text(
                    &format!("{p}.prompt.text"),
                    t,
                    Escape::Raw,
                    |l| l.as_bytes().to_vec(),
                )?),
                None => None,
            };
            let var = self.var_id(pr.var_name());
            inner.prompt = Some(crate::prompt::PromptPlan::new(pr, var, text));
        }
        for (var, spec) in &s.extract {
            let field = format!("{p}.extract.{var}");
            let (source, event, last) = match spec {
                SseExtractSpec::Path(path) => {
                    (ExtractSource::Json(json_path(&field, path)?), None, false)
                }
                SseExtractSpec::Full(SseExtractFull {
                    json,
                    regex: re,
                    event,
                    from,
                }) => {
                    let source = match (json, re) {
                        (Some(path), None) => {
                            ExtractSource::Json(json_path(&format!("{field}.json"), path)?)
                        }
                        (None, Some(r)) => {
                            ExtractSource::Regex(regex(&format!("{field}.regex"), r)?)
                        }
                        _ => {
                            return Err(PlanError::Pattern {
                                field,
                                message: "give one of `json` and `regex`".into(),
                            })
                        }
                    };
                    (source, event.as_deref(), *from == SseEventPick::Last)
                }
            };
            let var = self.var_id(var);
            inner.extract.push(SseExtractPlan {
                var,
                source,
                event: event.map(|e| e.as_bytes().into()),
                last,
            });
        }
        Ok(Arc::new(inner))
    }

    /// The checks on events of one `check:`, each numbered under a name that says
    /// it is judged on every event.
    fn event_checks(
        &mut self,
        p: &str,
        step: &str,
        c: &SseCheck,
    ) -> Result<Vec<SseCheckPlan>, PlanError> {
        let every = match &c.event {
            Some(e) => format!("every `{e}` event"),
            None => "every event".to_string(),
        };
        let event: Option<Box<[u8]>> = c.event.as_ref().map(|e| e.as_bytes().into());
        let mut tests: Vec<(String, EventTest)> = Vec::new();
        if c.json_valid {
            tests.push((format!("{every}'s data is JSON"), EventTest::JsonValid));
        }
        if !c.no_event.is_empty() {
            tests.push((
                format!("no `{}` event", c.no_event.join("`/`")),
                EventTest::NoEvent(c.no_event.iter().map(|n| n.as_bytes().into()).collect()),
            ));
        }
        if let Some(needle) = &c.body_contains {
            tests.push((
                format!("{every} contains {needle:?}"),
                EventTest::Data(CheckPlan::BodyContains {
                    id: 0,
                    needle: needle.as_bytes().into(),
                }),
            ));
        }
        if let Some(r) = &c.body_matches {
            tests.push((
                format!("{every} matches /{r}/"),
                EventTest::Data(CheckPlan::BodyMatches {
                    id: 0,
                    re: regex(&format!("{p}.body_matches"), r)?,
                }),
            ));
        }
        for (path, expected) in &c.json {
            tests.push((
                format!("{every}: {path} == {expected}"),
                EventTest::Data(CheckPlan::JsonEquals {
                    id: 0,
                    path: json_path(&format!("{p}.json"), path)?,
                    expected: expected.clone(),
                }),
            ));
        }
        for path in &c.json_exists {
            tests.push((
                format!("{every}: {path} exists"),
                EventTest::Data(CheckPlan::JsonExists {
                    id: 0,
                    path: json_path(&format!("{p}.json_exists"), path)?,
                }),
            ));
        }
        if tests.len() > MAX_EVENT_CHECKS {
            return Err(PlanError::Pattern {
                field: p.to_string(),
                message: format!(
                    "{} checks on events; at most {MAX_EVENT_CHECKS}",
                    tests.len()
                ),
            });
        }
        Ok(tests
            .into_iter()
            .map(|(name, test)| SseCheckPlan {
                id: self.check_id(format!("{step}: {name}")),
                event: event.clone(),
                test,
            })
            .collect())
    }
}

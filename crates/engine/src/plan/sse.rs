//! `sse:` compiled: the stop conditions as bytes to compare with each event, and,
//! for an LLM stream, the JSONPaths of the token text and of the server's count of
//! output tokens, parsed once.

use std::sync::Arc;
use std::time::Duration;

use pado_scenario::SseSpec;

use crate::json_query::JsonQuery;

use super::PlanError;

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
}

/// Where an LLM stream's events hold their token and the count of tokens.
#[derive(Debug)]
pub struct LlmPlan {
    /// The token text: the first path that holds a string wins.
    pub token: Vec<JsonQuery>,
    /// The server's own count of output tokens (replaces the count of events).
    pub usage: JsonQuery,
}

/// Compiles a step's `sse:` at field `p`.
pub(super) fn compile(p: &str, s: &SseSpec) -> Result<Arc<SsePlan>, PlanError> {
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
        Some(LlmPlan { token, usage })
    } else {
        None
    };
    Ok(Arc::new(SsePlan {
        until: s.until.as_ref().map(|u| u.as_bytes().into()),
        until_event: s.until_event.as_ref().map(|u| u.as_bytes().into()),
        count: s.count,
        max_time: s.max_time.map(|t| t.get()),
        llm,
    }))
}

//! Judging a response: checks evaluated against what it holds, values extracted
//! for later steps.

use std::time::Duration;

use crate::cookies::CookieJar;
use crate::plan::{CheckPlan, ExtractSource};
use crate::response_view::ResponseView;

pub(super) fn evaluate(
    c: &CheckPlan,
    r: &ResponseView<'_>,
    ok: bool,
    duration: Duration,
) -> (u32, bool) {
    match c {
        CheckPlan::Status { id, set } => (*id, ok && set.contains(r.status)),
        CheckPlan::BodyContains { id, needle } => {
            (*id, ok && memchr::memmem::find(r.body, needle).is_some())
        }
        CheckPlan::MaxDuration { id, max } => (*id, ok && duration <= *max),
        CheckPlan::BodyMatches { id, re } => (*id, ok && re.is_match(r.body)),
        CheckPlan::JsonExists { id, path } => (*id, ok && path.exists(r)),
        CheckPlan::JsonEquals { id, path, expected } => (
            *id,
            ok && path
                .first(r)
                .is_some_and(|got| json_matches(&got, expected)),
        ),
        CheckPlan::Header { id, name, contains } => (
            *id,
            ok && r
                .headers(name)
                .any(|v| memchr::memmem::find(v, contains).is_some()),
        ),
        // Judged once rendered ([`CheckPlan::with_value`]), never as is.
        CheckPlan::Templated { id, .. } => (*id, false),
    }
}

/// Equal as JSON, or the same text when one side is a string (`"3"` matches `3`).
pub(super) fn json_matches(got: &serde_json::Value, expected: &serde_json::Value) -> bool {
    use serde_json::Value;
    if got == expected {
        return true;
    }
    match (got, expected) {
        (Value::String(a), b) | (b, Value::String(a)) if !b.is_string() => {
            a.as_str() == b.to_string().as_str()
        }
        _ => false,
    }
}

pub(super) fn extract(
    src: &ExtractSource,
    r: &ResponseView<'_>,
    jar: &CookieJar,
    origin: usize,
) -> Option<Vec<u8>> {
    match src {
        ExtractSource::Json(path) => {
            let got = path.first(r)?;
            Some(match &*got {
                serde_json::Value::String(s) => s.as_bytes().to_vec(),
                other => other.to_string().into_bytes(),
            })
        }
        ExtractSource::Regex(re) => {
            let caps = re.captures(r.body)?;
            let m = caps.get(1).or_else(|| caps.get(0))?;
            Some(m.as_bytes().to_vec())
        }
        ExtractSource::Header(name) => r.header(name).map(|v| v.to_vec()),
        ExtractSource::Cookie(name) => jar.get(origin, name).map(|v| v.as_bytes().to_vec()),
    }
}

//! Checks and extraction compiled: each check numbered under its name, JSONPaths and
//! regular expressions parsed once, templated values bound.

use std::time::Duration;

use pado_scenario::{parse_status_class, Check, StatusMatch};

use crate::json_query::JsonQuery;
use crate::render::{Compiled, Escape};

use super::builder::Builder;
use super::*;

/// Where an extracted value goes and comes from.
#[derive(Debug)]
pub struct ExtractPlan {
    /// Variable id.
    pub var: usize,
    /// Source.
    pub source: ExtractSource,
}

/// Extraction sources, compiled.
#[derive(Debug)]
pub enum ExtractSource {
    /// JSONPath into the body.
    Json(JsonQuery),
    /// Regex on the body (first group or whole match).
    Regex(regex::bytes::Regex),
    /// A response header.
    Header(String),
    /// A cookie set by the response (or already in the jar).
    Cookie(String),
}

/// A compiled check.
#[derive(Debug)]
pub enum CheckPlan {
    /// Status among these.
    Status {
        /// Check id.
        id: u32,
        /// Accepted.
        set: StatusSet,
    },
    /// Body contains bytes.
    BodyContains {
        /// Check id.
        id: u32,
        /// Needle.
        needle: Box<[u8]>,
    },
    /// Request duration at most this.
    MaxDuration {
        /// Check id.
        id: u32,
        /// Limit.
        max: Duration,
    },
    /// JSONPath equals a value.
    JsonEquals {
        /// Check id.
        id: u32,
        /// Path.
        path: JsonQuery,
        /// Expected.
        expected: serde_json::Value,
    },
    /// JSONPath matches something.
    JsonExists {
        /// Check id.
        id: u32,
        /// Path.
        path: JsonQuery,
    },
    /// A header contains text.
    Header {
        /// Check id.
        id: u32,
        /// Header name.
        name: String,
        /// Text.
        contains: Box<[u8]>,
    },
    /// The body matches a regex.
    BodyMatches {
        /// Check id.
        id: u32,
        /// Pattern.
        re: regex::bytes::Regex,
    },
    /// A check whose value holds a template (`json: { $.id: "{{ id }}" }`): rendered
    /// per response with the VU's variables, then judged as the plain check it
    /// stands for ([`CheckPlan::with_value`]). Checks without templates stay
    /// pre-built and cost nothing extra.
    Templated {
        /// Check id.
        id: u32,
        /// The value's template.
        value: Compiled,
        /// Which check it is.
        kind: TemplatedCheck,
    },
}

/// What a [`CheckPlan::Templated`] compares its rendered value with.
#[derive(Debug)]
pub enum TemplatedCheck {
    /// The body contains the value.
    BodyContains,
    /// The JSONPath's first match equals the value (as text, so `"7"` matches `7`).
    JsonEquals(JsonQuery),
    /// The header contains the value.
    Header(String),
}

impl CheckPlan {
    /// The plain check a templated one stands for, with its value rendered.
    pub fn with_value(id: u32, kind: &TemplatedCheck, value: &[u8]) -> CheckPlan {
        match kind {
            TemplatedCheck::BodyContains => CheckPlan::BodyContains {
                id,
                needle: value.into(),
            },
            TemplatedCheck::JsonEquals(path) => CheckPlan::JsonEquals {
                id,
                path: path.clone(),
                expected: serde_json::Value::String(String::from_utf8_lossy(value).into_owned()),
            },
            TemplatedCheck::Header(name) => CheckPlan::Header {
                id,
                name: name.clone(),
                contains: value.into(),
            },
        }
    }
}

impl Builder<'_> {
    pub(super) fn checks_for(
        &mut self,
        field: &str,
        step: &str,
        c: &Check,
        req: &mut RequestPlan,
    ) -> Result<Vec<CheckPlan>, PlanError> {
        let mut out = Vec::new();
        if let Some(st) = &c.status {
            let (set, text) = match st {
                StatusMatch::One(n) => (StatusSet(vec![(*n, *n)]), n.to_string()),
                StatusMatch::Any(v) => (
                    StatusSet(v.iter().map(|n| (*n, *n)).collect()),
                    v.iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                ),
                StatusMatch::Class(s) => (
                    StatusSet(parse_status_class(s).into_iter().collect()),
                    s.clone(),
                ),
            };
            // A status check states what the user expects: it replaces the default
            // "below 400" expectation (checking for a 404 is not a failure), unless
            // the check is only counted.
            if c.fail_request != Some(false) {
                req.expect = set.clone();
            }
            let id = self.check_id(format!("{step}: status is {text}"));
            out.push(CheckPlan::Status { id, set });
        }
        if let Some(needle) = &c.body_contains {
            let id = self.check_id(format!("{step}: body contains {needle:?}"));
            req.keep_body = true;
            out.push(if needle.contains("{{") {
                self.templated_check(
                    &format!("{field}.body_contains"),
                    id,
                    needle,
                    TemplatedCheck::BodyContains,
                )?
            } else {
                CheckPlan::BodyContains {
                    id,
                    needle: needle.as_bytes().into(),
                }
            });
        }
        if let Some(r) = &c.body_matches {
            let id = self.check_id(format!("{step}: body matches /{r}/"));
            req.keep_body = true;
            out.push(CheckPlan::BodyMatches {
                id,
                re: regex(&format!("{field}.body_matches"), r)?,
            });
        }
        for (path, expected) in &c.json {
            let id = self.check_id(format!("{step}: {path} == {expected}"));
            req.keep_body = true;
            let jp = json_path(&format!("{field}.json"), path)?;
            out.push(match expected.as_str().filter(|t| t.contains("{{")) {
                Some(t) => self.templated_check(
                    &format!("{field}.json.{path}"),
                    id,
                    t,
                    TemplatedCheck::JsonEquals(jp),
                )?,
                None => CheckPlan::JsonEquals {
                    id,
                    path: jp,
                    expected: expected.clone(),
                },
            });
        }
        for path in &c.json_exists {
            let id = self.check_id(format!("{step}: {path} exists"));
            req.keep_body = true;
            out.push(CheckPlan::JsonExists {
                id,
                path: json_path(&format!("{field}.json_exists"), path)?,
            });
        }
        for (name, contains) in &c.header {
            let id = self.check_id(format!("{step}: header {name} contains {contains:?}"));
            req.keep_head = true;
            out.push(if contains.contains("{{") {
                self.templated_check(
                    &format!("{field}.header.{name}"),
                    id,
                    contains,
                    TemplatedCheck::Header(name.clone()),
                )?
            } else {
                CheckPlan::Header {
                    id,
                    name: name.clone(),
                    contains: contains.as_bytes().into(),
                }
            });
        }
        if let Some(max) = c.max_duration {
            let id = self.check_id(format!("{step}: duration <= {max}"));
            out.push(CheckPlan::MaxDuration { id, max: max.get() });
        }
        Ok(out)
    }

    /// A check whose value is a template, rendered as is (no escaping: it is
    /// compared with response text, not sent).
    pub(super) fn templated_check(
        &mut self,
        field: &str,
        id: u32,
        text: &str,
        kind: TemplatedCheck,
    ) -> Result<CheckPlan, PlanError> {
        let value = self.compile_text(field, text, Escape::Raw, |l| l.as_bytes().to_vec())?;
        Ok(CheckPlan::Templated { id, value, kind })
    }
}

pub(super) fn json_path(field: &str, path: &str) -> Result<JsonQuery, PlanError> {
    JsonQuery::parse(path).map_err(|e| PlanError::Pattern {
        field: field.to_string(),
        message: format!("`{path}` is not a JSONPath: {e}"),
    })
}

pub(super) fn regex(field: &str, r: &str) -> Result<regex::bytes::Regex, PlanError> {
    regex::bytes::Regex::new(r).map_err(|e| PlanError::Pattern {
        field: field.to_string(),
        message: format!("bad regular expression: {e}"),
    })
}

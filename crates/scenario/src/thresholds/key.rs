//! Metric keys: `metric` or `metric{tag:value,...}`, checked against the catalogue,
//! and where a command-line threshold's key ends.

use super::cursor::Cursor;
use super::hint::suggest_metric;
use super::tag_rules;
use super::ThresholdError;
use crate::metric_catalog::{self, MetricInfo};

/// A tag filter, as in [`Threshold::tags`].
pub(super) type Tags = Vec<(String, String)>;

pub(super) fn parse_key(key: &str) -> Result<(&'static MetricInfo, Tags), ThresholdError> {
    let k = key.trim();
    let brace = k.find('{');
    let name = match brace {
        Some(i) => k[..i].trim(),
        None => k,
    };
    if name.is_empty() {
        return Err(ThresholdError::EmptyMetric { key: k.to_string() });
    }
    if brace.is_none() && name.contains('}') {
        return Err(ThresholdError::InvalidTags {
            key: k.to_string(),
            reason: "`}` without a matching `{`".to_string(),
        });
    }
    let info = metric_catalog::lookup(name).ok_or_else(|| ThresholdError::UnknownMetric {
        name: name.to_string(),
        hint: suggest_metric(name),
    })?;
    let Some(i) = brace else {
        return Ok((info, Vec::new()));
    };
    let invalid = |reason: String| ThresholdError::InvalidTags {
        key: k.to_string(),
        reason,
    };
    let body = &k[i + 1..];
    let (tags, used) = parse_tag_block(body).map_err(invalid)?;
    let rest = body[used..].trim();
    if !rest.is_empty() {
        return Err(invalid(format!(
            "unexpected `{rest}` after `}}`; a tag value with an unmatched `}}` or a `,` is quoted: `name:\"...\"`"
        )));
    }
    for (tag, value) in &tags {
        if let Some(reason) = tag_rules::refusal(info.name, tag, value) {
            if tag_rules::is_scope(tag) && !tag_rules::is_run_gauge(info.name) {
                continue;
            }
            return Err(ThresholdError::TagNotApplicable {
                metric: info.name.to_string(),
                tag: tag.clone(),
                reason,
            });
        }
    }
    Ok((info, tags))
}

const MISSING_CLOSE: &str = "missing closing `}`";

/// Parses the text after `{` up to and including the matching `}`; returns the tags
/// and the number of bytes consumed, or a reason for [`ThresholdError::InvalidTags`].
pub(super) fn parse_tag_block(s: &str) -> Result<(Tags, usize), String> {
    let mut c = Cursor::new(s);
    let mut tags: Vec<(String, String)> = Vec::new();
    loop {
        c.skip_ws();
        match c.peek() {
            None => return Err(MISSING_CLOSE.to_string()),
            Some('}') if tags.is_empty() => {
                return Err(
                    "empty tag filter `{}`; remove the braces or write `{name:value}`".to_string(),
                )
            }
            Some('}') => return Err("trailing `,` before `}`".to_string()),
            Some(',') => return Err("empty tag before `,`; write `name:value`".to_string()),
            _ => {}
        }
        let name = c
            .take_while(|ch| !matches!(ch, ':' | ',' | '}' | '{' | '"' | '\''))
            .trim();
        match c.peek() {
            Some(':') => {}
            None => return Err(MISSING_CLOSE.to_string()),
            Some(',' | '}') => {
                return Err(format!("tag `{name}` has no value; write `{name}:value`"));
            }
            Some(ch) => return Err(format!("unexpected `{ch}` in tag name `{name}`")),
        }
        if name.is_empty() {
            return Err("empty tag name before `:`; write `name:value`".to_string());
        }
        if name.contains(char::is_whitespace) {
            return Err(format!("tag name `{name}` contains whitespace"));
        }
        c.bump(); // ':'
        c.skip_ws();
        let value = match c.peek() {
            Some(q @ ('"' | '\'')) => {
                c.bump();
                let mut v = String::new();
                loop {
                    match c.bump() {
                        None => {
                            return Err(format!(
                                "unterminated quoted value of tag `{name}`; close it with {q}"
                            ))
                        }
                        Some(ch) if ch == q => break,
                        Some('\\') => match c.peek() {
                            Some(e @ ('\\' | '"' | '\'')) => {
                                c.bump();
                                v.push(e);
                            }
                            _ => v.push('\\'),
                        },
                        Some(ch) => v.push(ch),
                    }
                }
                c.skip_ws();
                match c.peek() {
                    Some(',' | '}') => {}
                    None => return Err(MISSING_CLOSE.to_string()),
                    Some(ch) => {
                        return Err(format!(
                            "unexpected `{ch}` after the quoted value of tag `{name}`; separate tags with `,`"
                        ))
                    }
                }
                v
            }
            _ => {
                // Braces nest, as in k6's `{name:http://${}.com}`: a `}` closes
                // the filter only when every `{` of the value is closed.
                let mut depth = 0usize;
                let v = c
                    .take_while(|ch| match ch {
                        '{' => {
                            depth += 1;
                            true
                        }
                        '}' if depth > 0 => {
                            depth -= 1;
                            true
                        }
                        ',' | '}' => false,
                        _ => true,
                    })
                    .trim();
                if c.peek().is_none() {
                    return Err(MISSING_CLOSE.to_string());
                }
                if v.is_empty() {
                    return Err(format!(
                        "tag `{name}` has no value; write `{name}:value` (or `{name}:\"\"` for an empty value)"
                    ));
                }
                v.to_string()
            }
        };
        if tags.iter().any(|(k, _)| k == name) {
            return Err(format!("tag `{name}` is given twice"));
        }
        tags.push((name.to_string(), value));
        match c.bump() {
            Some('}') => return Ok((tags, c.pos)),
            Some(',') => continue,
            _ => return Err(MISSING_CLOSE.to_string()),
        }
    }
}

/// Splits a CLI threshold at the first `:` outside a tag filter; `None` when there is
/// no such `:` (bare expression).
pub(super) fn split_cli(s: &str) -> Result<Option<(&str, &str)>, ThresholdError> {
    let mut c = Cursor::new(s);
    while let Some(ch) = c.bump() {
        match ch {
            ':' => {
                let colon = c.pos - 1;
                return Ok(Some((&s[..colon], &s[c.pos..])));
            }
            '{' => {
                let (_, used) =
                    parse_tag_block(c.rest()).map_err(|reason| ThresholdError::InvalidTags {
                        key: s.trim().to_string(),
                        reason,
                    })?;
                c.pos += used;
            }
            _ => {}
        }
    }
    Ok(None)
}

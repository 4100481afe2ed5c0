//! Reading a scenario file: YAML (or JSON, which is YAML) into [`Config`], then
//! validation that collects every problem with its line. The rules live by what they
//! judge: `validator` (its state and the file-level fields), `scenarios` (executors,
//! limits, data feeds), `requests` (steps, URLs, headers, checks), `websocket` (`ws:` steps), `grpc`
//! (`grpc:` steps) and `templates`.

mod events;
mod experiment;
mod grpc;
mod requests;
mod scenarios;
mod templates;
#[cfg(test)]
mod tests;
mod validator;
mod websocket;

use std::path::Path;

use crate::error::{Diagnostic, ScenarioError};
use crate::line_index::LineIndex;
use crate::model::*;
pub use grpc::split_method;
use validator::{defined_names, Validator};

/// A loaded, validated scenario with where it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The scenario.
    pub config: Config,
    /// File name as given (for messages).
    pub file: String,
    /// Directory of the file (relative paths in the scenario are resolved against it).
    pub base_dir: std::path::PathBuf,
    /// Where each field of the file sits, for later errors (thresholds, compiling)
    /// without reading the file again.
    pub lines: LineIndex,
}

/// Read and validate a scenario file.
pub fn load_file(path: &Path) -> Result<Loaded, ScenarioError> {
    load_file_with_target(path, None)
}

/// Read a scenario file, replace its `target` with `target` (from `--target`) when
/// given, then validate: a file without `target:` whose paths are relative is valid
/// once the command line supplies the base URL.
pub fn load_file_with_target(path: &Path, target: Option<&str>) -> Result<Loaded, ScenarioError> {
    let file = path.display().to_string();
    let text = crate::limits::read_capped_string(path, crate::limits::MAX_SCENARIO_BYTES).map_err(
        |source| ScenarioError::Read {
            file: file.clone(),
            source,
        },
    )?;
    let config = parse_str_with_target(&text, &file, target)?;
    Ok(Loaded {
        config,
        lines: LineIndex::build(text.strip_prefix('\u{feff}').unwrap_or(&text)),
        file,
        base_dir: path
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| ".".into()),
    })
}

/// Parse and validate scenario text; `file` names it in messages.
///
/// A leading UTF-8 byte order mark (Windows editors write one) is dropped: the YAML
/// parser would otherwise read it as content and refuse the file as "more than one
/// document". It sits before the first line, so line numbers stay as they were.
pub fn parse_str(text: &str, file: &str) -> Result<Config, ScenarioError> {
    parse_str_with_target(text, file, None)
}

/// [`parse_str`] with the file's `target` replaced before validation.
pub fn parse_str_with_target(
    text: &str,
    file: &str,
    target: Option<&str>,
) -> Result<Config, ScenarioError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // First pass: syntax, depth and duplicate keys (fatal), then the structure
    // against the model, every problem at once (see `structure`).
    let tree = crate::structure::read(text, file).map_err(ScenarioError::Invalid)?;
    let shape = tree
        .as_ref()
        .map(|t| crate::structure::check(t, file))
        .unwrap_or_default();
    let index = LineIndex::build(text);
    let config: Config = match serde_yaml_ng::from_str(text) {
        Ok(c) => c,
        Err(e) if shape.is_empty() => {
            return Err(ScenarioError::Invalid(vec![serde_diagnostic(&e, file)]))
        }
        Err(_) => return Err(ScenarioError::Invalid(shape)),
    };
    let mut config = config;
    if let Some(t) = target {
        config.target = Some(t.to_string());
    }
    if let Some(t) = config.target.clone().filter(|t| t.contains("{{")) {
        match crate::template::render_env_only(&t) {
            Ok(v) => {
                config.target = Some(v);
                config.target_template = Some(t);
            }
            Err(e) => {
                let pos = index.locate("target");
                let hint = match e
                    .strip_prefix("environment variable `")
                    .and_then(|r| r.split_once('`'))
                {
                    Some((name, _)) => format!("set it before running: `export {name}=...`"),
                    None => "write e.g. `target: \"http://{{ env.TARGET_HOST }}:8080\"`".into(),
                };
                return Err(ScenarioError::Invalid(vec![Diagnostic {
                    file: file.to_string(),
                    line: pos.map(|p| p.0),
                    column: pos.map(|p| p.1),
                    field: "target".into(),
                    message: e,
                    hint: Some(hint),
                }]));
            }
        }
    }
    let mut v = Validator {
        file,
        index: &index,
        out: Vec::new(),
        names: defined_names(&config),
    };
    v.config(&config);
    if v.out.is_empty() {
        Ok(config)
    } else {
        Err(ScenarioError::Invalid(v.out))
    }
}

/// Validate a configuration built in code (quick mode, overrides): same rules, no lines.
pub fn validate(config: &Config, file: &str) -> Result<(), ScenarioError> {
    let index = LineIndex::default();
    let mut v = Validator {
        file,
        index: &index,
        out: Vec::new(),
        names: defined_names(config),
    };
    v.config(config);
    if v.out.is_empty() {
        Ok(())
    } else {
        Err(ScenarioError::Invalid(v.out))
    }
}

fn serde_diagnostic(e: &serde_yaml_ng::Error, file: &str) -> Diagnostic {
    let loc = e.location();
    let mut msg = e.to_string();
    // serde_yaml_ng appends " at line N column M"; the location is shown in front.
    if let Some(i) = msg.find(" at line ") {
        msg.truncate(i);
    }
    let (field, message) = match msg.split_once(": ") {
        Some((f, m))
            if !f.contains(' ')
                && (f.contains('.') || f.contains('[') || f.chars().all(is_ident)) =>
        {
            (f.to_string(), m.to_string())
        }
        _ => (String::new(), msg.clone()),
    };
    let hint = if message.contains("did not match any variant of untagged enum RequestSpec") {
        Some("a request is `\"GET /path\"` or `{ method: POST, url: /path, json: {...} }`".into())
    } else if message.contains("untagged enum Think") {
        Some("think time is `1s`, `{ uniform: [0.5s, 2s] }`, `{ normal: { mean: 1s, stddev: 200ms } }` or `{ pacing: 5s }`".into())
    } else if message.contains("untagged enum StatusMatch") {
        Some("status is `200`, `[200, 201]` or `\"2xx\"`".into())
    } else if message.contains("untagged enum ThresholdEntry") {
        Some("a threshold is `\"p(95) < 200\"` or `{ threshold: \"p(95) < 200\", abort_on_fail: true }`".into())
    } else if message.contains("unknown field") {
        Some("check the spelling; `pado validate` lists every problem at once".into())
    } else {
        None
    };
    Diagnostic {
        file: file.to_string(),
        line: loc.as_ref().map(|l| l.line()),
        column: loc.as_ref().map(|l| l.column()),
        field,
        message,
        hint,
    }
}

pub(super) fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Split `"GET /path"` (or a bare URL, meaning GET) into method and URL. Everything
/// after the method is the URL, so a query with a space (`q=검색 엔진`) is kept whole
/// and percent-encoded later.
pub fn split_request_line(line: &str) -> Result<(String, String), String> {
    let t = line.trim();
    if t.is_empty() {
        return Err("empty request".into());
    }
    match t.split_once(char::is_whitespace) {
        Some((first, rest)) if first.chars().all(|c| c.is_ascii_alphabetic()) => {
            Ok((first.to_ascii_uppercase(), rest.trim().to_string()))
        }
        _ => Ok(("GET".into(), t.to_string())),
    }
}

/// A status written as text: `"2xx"` (a class) or `"201"` (one code), as the
/// inclusive range of codes it accepts. `None` if it is neither.
pub fn parse_status_class(s: &str) -> Option<(u16, u16)> {
    let b = s.trim().as_bytes();
    if b.len() == 3 && (b'1'..=b'5').contains(&b[0]) && b[1..].eq_ignore_ascii_case(b"xx") {
        let c = (b[0] - b'0') as u16 * 100;
        Some((c, c + 99))
    } else {
        match s.trim().parse::<u16>() {
            Ok(n) if (100..=599).contains(&n) => Some((n, n)),
            _ => None,
        }
    }
}

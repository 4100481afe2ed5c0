//! Turning what users already have into a scenario file they can edit: a browser
//! recording ([`har::from_har`]) or a "Copy as cURL" command line
//! ([`curl::from_curl`]). Both produce an ordinary [`Config`], so everything the
//! loader validates also holds for an import, and [`to_yaml`] writes it in the same
//! format users write by hand (docs/scenario.md).
//!
//! The helpers here are shared by both importers, and steps are named by the one
//! rule of [`crate::naming`], so a recording and a curl command of the same request
//! produce the same step.

pub mod curl;
pub mod har;
pub mod multipart;

use std::collections::BTreeMap;

use crate::model::*;
use crate::Dur;
use pado_base::units::{duration_compact, parse_duration};

pub use curl::{from_curl, import_curl, CurlContext};
pub use har::{from_har, import_har, import_har_file, HarFileError};

/// An import's result: the configuration, and what the user should know about how
/// it was made (options that were ignored, recorded parts that were not sent as
/// recorded). The notes are sentences for a person, printed by `pado import`.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The scenario.
    pub config: Config,
    /// One sentence each; empty when the import is exactly the input.
    pub notes: Vec<String>,
}

/// What a HAR import keeps. The defaults aim at a replay that loads the application
/// server, not the CDN: static assets are dropped and every step checks the status
/// the browser saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    /// Keep requests for static assets (`.js`, `.css`, images, fonts, source maps).
    /// Default false: a load test of the application rarely wants them, and browsers
    /// cache them anyway. `data:` and other non-HTTP URLs are always dropped (they are
    /// never sent over the network).
    pub include_static: bool,
    /// Add `check: { status: <recorded status> }` to every request step (default
    /// true), so a replay that starts failing is visible at once.
    pub checks: bool,
    /// Keep only requests to this host (`example.com`, or `example.com:8080` to also
    /// match the port); case-insensitive. Default: keep every host.
    pub host_filter: Option<String>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            include_static: false,
            checks: true,
            host_filter: None,
        }
    }
}

/// Why an import failed. Messages name the part of the input to look at (a HAR
/// entry's index, a curl option), because the input is usually too large or too
/// dense to search by eye.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The HAR text is not JSON at all.
    #[error("not a HAR file: not valid JSON: {0}")]
    NotJson(String),
    /// JSON, but without the HAR structure.
    #[error("not a HAR file: missing log.entries")]
    NotHar,
    /// One HAR entry lacks what a request needs.
    #[error("HAR entry log.entries[{index}]: {reason}")]
    BadEntry {
        /// Position of the entry in `log.entries` (from 0).
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Every entry was filtered out.
    #[error("no requests left to import: {0}")]
    NoRequests(String),
    /// The curl command has no URL.
    #[error("no URL in the curl command")]
    NoUrl,
    /// More than one URL: a scenario step is one request.
    #[error(
        "more than one URL in the curl command (`{0}` and `{1}`); import one request at a time"
    )]
    ManyUrls(String, String),
    /// A URL pado cannot request.
    #[error("`{url}` is not a usable URL: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// Why.
        reason: String,
    },
    /// A curl option pado does not know.
    #[error("unknown option {0}")]
    UnknownOption(String),
    /// A curl option that is known but cannot be expressed in a scenario.
    #[error("option {option} is not supported: {why}")]
    Unsupported {
        /// The option as written.
        option: String,
        /// Why, and what to do instead.
        why: String,
    },
    /// A file a curl option names (`-d @FILE`, `--data-binary @FILE`) that cannot
    /// be read; the path is resolved against the directory the command runs in.
    #[error("option {option} names the file `{written}` ({path}), which cannot be read: {reason}")]
    DataFile {
        /// The option as written (`-d`, `--data-binary`).
        option: String,
        /// The file name as written after `@`.
        written: String,
        /// Where pado looked.
        path: String,
        /// Why it cannot be read.
        reason: String,
    },
    /// A curl option given without its value.
    #[error("option {0} needs a value")]
    MissingValue(String),
    /// A quote opened and never closed.
    #[error("unbalanced quotes: a {0} quote is never closed")]
    UnbalancedQuotes(&'static str),
    /// Input a scenario file cannot express without changing it.
    #[error("cannot write this request as a scenario: {0}")]
    Unrepresentable(String),
    /// A request method the scenario format does not allow.
    #[error("method `{0}` is not supported (use GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS)")]
    BadMethod(String),
}

/// Methods the scenario loader accepts (kept in step with `load.rs`).
pub(crate) const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Write a configuration as YAML a user would edit: fields left at their defaults
/// (nulls, empty lists and maps, `insecure: false`) are left out, so the file shows
/// only what the import decided. The text always parses back (with
/// [`crate::parse_str`]) to the same configuration; in the rare case pruning would
/// change that, the full serialization is written instead.
pub fn to_yaml(cfg: &Config) -> String {
    let full = || {
        serde_yaml_ng::to_string(cfg).unwrap_or_else(|e| format!("# could not write YAML: {e}\n"))
    };
    let mut v = match serde_yaml_ng::to_value(cfg) {
        Ok(v) => v,
        Err(_) => return full(),
    };
    prune(&mut v, "");
    match serde_yaml_ng::to_string(&v) {
        Ok(text) if serde_yaml_ng::from_str::<Config>(&text).ok().as_ref() == Some(cfg) => text,
        _ => full(),
    }
}

/// [`to_yaml`] with a first comment line saying where the scenario came from (e.g.
/// the HAR file name or `curl`), so a file found later explains itself.
pub fn to_yaml_with_source(cfg: &Config, source: &str) -> String {
    let source: String = source
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!(
        "# imported by pado from {source}\n# edit the load (executor, vus, duration) and checks, then: pado validate FILE\n{}",
        to_yaml(cfg)
    )
}

/// Remove default-valued fields from a serialized configuration. User data (a request's
/// `json` body, inline data `values`, a check's expected JSON values) is left alone: an
/// empty object there is meaningful.
fn prune(v: &mut serde_yaml_ng::Value, parent: &str) {
    use serde_yaml_ng::Value;
    match v {
        Value::Mapping(m) => m.retain(|k, val| {
            let key = k.as_str().unwrap_or("");
            if val.is_null() {
                return false;
            }
            let user_data = (key == "json" && parent != "check") || key == "values";
            if user_data {
                return true;
            }
            if matches!(key, "insecure" | "abort_on_fail") && val.as_bool() == Some(false) {
                return false;
            }
            if !(key == "json" && parent == "check") {
                prune(val, key);
            }
            match val {
                Value::Mapping(m) => !m.is_empty(),
                Value::Sequence(s) => !s.is_empty(),
                _ => true,
            }
        }),
        Value::Sequence(s) => s.iter_mut().for_each(|x| prune(x, parent)),
        _ => {}
    }
}

/// A URL split the way a scenario needs it.
pub(crate) struct SplitUrl {
    /// `scheme://host[:port]` (default port left out), host lower-cased.
    pub origin: String,
    /// Host name as the URL library normalizes it.
    pub host: String,
    /// Port, explicit or the scheme's default.
    pub port: u16,
    /// Path and query exactly as given (no fragment); `/` when empty.
    pub path_query: String,
    /// The whole URL as given, without the fragment.
    pub absolute: String,
}

/// Split an http(s) URL, keeping the path and query byte for byte as given (HAR and
/// curl URLs are already percent-encoded; re-encoding could change them).
pub(crate) fn split_url(raw: &str) -> Result<SplitUrl, String> {
    let raw = raw.trim();
    let no_frag = raw.split('#').next().unwrap_or("");
    let u = url::Url::parse(no_frag).map_err(|e| e.to_string())?;
    if u.scheme() != "http" && u.scheme() != "https" {
        return Err(format!("scheme `{}` is not supported", u.scheme()));
    }
    let host = u.host_str().ok_or("no host")?.to_string();
    if host.is_empty() {
        return Err("no host".into());
    }
    if host.contains(['{', '}']) {
        // `target:` takes only `{{ env.NAME }}` templates: write such a host by hand.
        return Err(format!("the host `{host}` looks like a template; write the target by hand (e.g. `{{{{ env.TARGET_HOST }}}}`)"));
    }
    let port = u.port_or_known_default().unwrap_or(80);
    let origin = u.origin().ascii_serialization();
    let after_scheme = no_frag
        .find("://")
        .map(|i| i + 3)
        .ok_or("no `://` after the scheme")?;
    let rest = &no_frag[after_scheme..];
    let path_query = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => rest[i..].to_string(),
        Some(i) => format!("/{}", &rest[i..]),
        None => "/".to_string(),
    };
    Ok(SplitUrl {
        origin,
        host,
        port,
        path_query,
        absolute: no_frag.to_string(),
    })
}

/// Headers a client adds by itself (or that only make sense on one connection or in
/// one browser session): replaying the recorded values would be wrong or pointless.
/// `Cookie` is among them for recordings (the VU's cookie jar keeps the session), not
/// for curl commands, where it usually carries the login.
pub(crate) fn is_automatic_header(name: &str, drop_cookie: bool) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with(':')
        || n.starts_with("sec-")
        || matches!(
            n.as_str(),
            "host"
                | "content-length"
                | "connection"
                | "keep-alive"
                | "proxy-connection"
                | "transfer-encoding"
                | "te"
                | "trailer"
                | "upgrade"
                | "accept-encoding"
                | "if-none-match"
                | "if-modified-since"
        )
        || (drop_cookie && n == "cookie")
}

/// Whether the loader would accept this header (name characters, no line breaks or
/// NUL bytes).
pub(crate) fn valid_header(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && !value.contains(['\r', '\n', '\0'])
}

/// Add a header, joining repeated names (case-insensitively) with `, ` as HTTP does.
pub(crate) fn push_header(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    match headers
        .iter_mut()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
    {
        Some((_, v)) => {
            v.push_str(", ");
            v.push_str(value);
        }
        None => headers.push((name.to_string(), value.to_string())),
    }
}

/// The value of a header, case-insensitively.
pub(crate) fn header_value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Remove a header, case-insensitively.
pub(crate) fn remove_header(headers: &mut Vec<(String, String)>, name: &str) {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
}

/// A request body in the form the scenario writes it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Body {
    /// No body.
    None,
    /// `json:` (the loader sets `Content-Type: application/json`).
    Json(serde_json::Value),
    /// `form:` (the loader sets the form content type).
    Form(BTreeMap<String, String>),
    /// `body:` as given.
    Raw(String),
    /// Bytes that must go out exactly (not UTF-8, or text a `body:` would read as
    /// a template): `body_base64:`, or `body:` when that says the same bytes.
    Bytes(Vec<u8>),
    /// `body_file:` (curl `--data-binary @file`).
    File(String),
}

/// The media type without parameters, lower-cased: `application/json`.
pub(crate) fn mime_essence(ct: &str) -> String {
    ct.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Choose how to write a body so that the engine sends exactly `text`: parsed JSON
/// or form fields (which the user can edit as values rather than escaped text) only
/// when the engine's writing of them gives back `text` byte for byte; the text as
/// recorded otherwise (big numbers, key order, spacing and `+` for spaces survive
/// only that way, and signed bodies depend on them). Fixes up the `Content-Type`
/// header to match: it is dropped when `json:`/`form:` set exactly that type, added
/// for a raw body when only `mime` knew it.
pub(crate) fn classify_body(
    text: &str,
    mime: Option<&str>,
    headers: &mut Vec<(String, String)>,
) -> Body {
    if text.is_empty() {
        return Body::None;
    }
    let ct = header_value(headers, "content-type")
        .map(str::to_string)
        .or_else(|| mime.map(str::to_string));
    let essence = ct.as_deref().map(mime_essence).unwrap_or_default();
    if essence == "application/json" || essence.ends_with("+json") {
        if let Some(v) = exact_json(text) {
            if essence == "application/json" {
                remove_header(headers, "content-type");
            } else if header_value(headers, "content-type").is_none() {
                headers.push(("Content-Type".into(), ct.clone().unwrap_or_default()));
            }
            return Body::Json(v);
        }
    } else if essence == "application/x-www-form-urlencoded" {
        if let Some(form) = parse_form(text).filter(|f| form_text(f) == text) {
            remove_header(headers, "content-type");
            return Body::Form(form);
        }
    }
    if let Some(ct) = ct {
        if header_value(headers, "content-type").is_none() && !ct.is_empty() {
            headers.push(("Content-Type".into(), ct));
        }
    }
    Body::Raw(text.to_string())
}

/// The JSON value of `text` when a `json:` body of it is sent as exactly `text`:
/// the engine writes compact JSON with keys in sorted order and numbers as
/// `serde_json` prints them, so this holds only for text already in that form
/// (`{"a":1,"b":"x"}`), with no control characters in strings (escaped differently)
/// and no `{{` (a template hole in `json:`).
fn exact_json(text: &str) -> Option<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let plain = !v.is_null()
        && !json_has_hole(&v)
        && !json_has_control(&v)
        && serde_json::to_string(&v).ok()? == text;
    plain.then_some(v)
}

/// A form as the engine writes a `form:` body: fields in name order, each name and
/// value percent-encoded but for the unreserved characters.
fn form_text(form: &BTreeMap<String, String>) -> String {
    form.iter()
        .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Parse `a=1&b=%EA%B0%80` into fields, but only when that loses nothing: every pair
/// has `=`, no name repeats, and every escape decodes to UTF-8. Otherwise the body is
/// kept as text (a map could not say it).
pub(crate) fn parse_form(text: &str) -> Option<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for pair in text.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=')?;
        let k = percent_decode(k, true)?;
        let v = percent_decode(v, true)?;
        if k.is_empty() || out.insert(k, v).is_some() {
            return None;
        }
    }
    if out.is_empty() {
        None
    } else {
        Some(out)
    }
}

/// Strict percent-decoding (`+` is a space when `plus` is set): `None` on a broken
/// escape (`%` not followed by two hex digits) or bytes that are not UTF-8, so a
/// body that is not really a form stays text.
pub(crate) fn percent_decode(s: &str, plus: bool) -> Option<String> {
    let b = s.as_bytes();
    let broken = b.iter().enumerate().any(|(i, &c)| {
        c == b'%'
            && !b
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if broken {
        return None;
    }
    let spaced;
    let s = if plus && s.contains('+') {
        spaced = s.replace('+', " ");
        &spaced
    } else {
        s
    };
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// Everything but the unreserved characters (`A-Z a-z 0-9 - . _ ~`, RFC 3986).
const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encode everything but the unreserved characters (as curl's
/// `--data-urlencode` does).
pub(crate) fn percent_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, NOT_UNRESERVED).to_string()
}

/// The step name for a request: `METHOD /path` with ids grouped, percent-escapes in
/// the path shown as text (Hangul reads better than `%ED%95%9C`). `host` is prefixed
/// for requests that do not go to the target, so two hosts' `/` do not share a name.
pub(crate) fn step_name(method: &str, path_query: &str, host: Option<&str>) -> String {
    let name = crate::naming::default_step_name(method, path_query);
    match host {
        // `GET /x` → `GET host/x`.
        Some(h) => format!("{method} {h}{}", &name[method.len() + 1..]),
        None => name,
    }
}

/// One request step: the short `"GET /path"` form when there is nothing but a method
/// and URL (easiest to read and edit), the full form otherwise.
///
/// Scenario text reads `{{` as the start of a template hole and has no escape for it,
/// so recorded text containing `{{` is written so that it still goes out as recorded:
/// braces in the URL are percent-encoded (the same URL to a server), form values
/// are written encoded, and a body becomes `body_base64:` (sent byte for byte, never
/// read as a template). A header with `{{` cannot be written without changing it:
/// that is the error returned.
pub(crate) fn request_step(
    name: String,
    method: &str,
    url: String,
    mut headers: Vec<(String, String)>,
    body: Body,
    timeout: Option<Dur>,
) -> Result<Step, String> {
    const NO_ESCAPE: &str =
        "which a scenario file reads as a template (there is no escape for it yet); edit the input";
    let url = if url.contains("{{") {
        url.replace('{', "%7B").replace('}', "%7D")
    } else {
        url
    };
    if let Some((n, _)) = headers.iter().find(|(_, v)| v.contains("{{")) {
        return Err(format!("header `{n}` contains `{{{{`, {NO_ESCAPE}"));
    }
    let body = match body {
        // Text a `body:` would read as a template, or bytes that are not text, go
        // out exactly as `body_base64:`; anything else as the text it is.
        Body::Raw(t) if t.contains("{{") => Body::Bytes(t.into_bytes()),
        Body::Bytes(b) => match String::from_utf8(b) {
            Ok(t) if !t.contains("{{") => Body::Raw(t),
            Ok(t) => Body::Bytes(t.into_bytes()),
            Err(e) => Body::Bytes(e.into_bytes()),
        },
        Body::Json(v) if json_has_hole(&v) => {
            if header_value(&headers, "content-type").is_none() {
                headers.push(("Content-Type".into(), "application/json".into()));
            }
            Body::Bytes(v.to_string().into_bytes())
        }
        Body::Form(f) if f.iter().any(|(k, v)| k.contains("{{") || v.contains("{{")) => {
            if header_value(&headers, "content-type").is_none() {
                headers.push((
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ));
            }
            Body::Raw(form_text(&f))
        }
        b => b,
    };
    let simple = headers.is_empty()
        && body == Body::None
        && timeout.is_none()
        && !url.chars().any(char::is_whitespace);
    let request = if simple {
        RequestSpec::Line(format!("{method} {url}"))
    } else {
        let mut full = RequestFull {
            method: Some(method.to_string()),
            url,
            headers: headers.into_iter().collect(),
            timeout,
            ..Default::default()
        };
        match body {
            Body::None => {}
            Body::Json(v) => full.json = Some(v),
            Body::Form(f) => full.form = Some(f),
            Body::Raw(t) => full.body = Some(t),
            Body::Bytes(b) => {
                use base64::Engine as _;
                full.body_base64 = Some(base64::engine::general_purpose::STANDARD.encode(b));
            }
            Body::File(p) => full.body_file = Some(p),
        }
        RequestSpec::Full(full)
    };
    Ok(Step {
        name: Some(name),
        request: Some(request),
        ..Default::default()
    })
}

/// Whether any string (or key) in a JSON value contains `{{`.
fn json_has_hole(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => s.contains("{{"),
        Value::Array(a) => a.iter().any(json_has_hole),
        Value::Object(o) => o.iter().any(|(k, v)| k.contains("{{") || json_has_hole(v)),
        _ => false,
    }
}

/// Whether any string value holds a control character other than `\n`, `\r`, `\t`:
/// `serde_json` writes those as `\b`, `\f` or `\u001f`, the engine as `\u0008`,
/// `\u000C`, `\u001F`, so such a value would not go out as recorded.
fn json_has_control(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => s
            .chars()
            .any(|c| c < ' ' && !matches!(c, '\n' | '\r' | '\t')),
        Value::Array(a) => a.iter().any(json_has_control),
        Value::Object(o) => o.values().any(json_has_control),
        _ => false,
    }
}

/// A duration that survives writing and reading back unchanged (what the file says is
/// exactly what the model holds).
pub(crate) fn stable_dur(d: std::time::Duration) -> Dur {
    Dur(parse_duration(&duration_compact(d)).unwrap_or(d))
}

/// The configuration both importers produce: one `main` scenario, one VU for one
/// minute, a starting point the user scales up after checking that it replays.
pub(crate) fn imported_config(
    target: Option<String>,
    defaults: Defaults,
    flow: Vec<Step>,
) -> Config {
    let name = target
        .as_deref()
        .and_then(|t| url::Url::parse(t).ok())
        .and_then(|u| u.host_str().map(str::to_string));
    let scenario = Scenario {
        executor: ExecutorKind::ConstantVus,
        vus: Some(1),
        duration: Some(Dur::from_secs(60)),
        flow,
        ..Default::default()
    };
    Config {
        name,
        target,
        defaults,
        scenarios: vec![("main".into(), scenario)],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls_keeping_the_path_as_given() {
        let s = split_url("https://Example.com:443/s?q=%EA%B2%80%EC%83%89#top").unwrap();
        assert_eq!(s.origin, "https://example.com");
        assert_eq!(s.path_query, "/s?q=%EA%B2%80%EC%83%89");
        assert_eq!(s.port, 443);
        let s = split_url("http://h:8080?x=1").unwrap();
        assert_eq!(s.origin, "http://h:8080");
        assert_eq!(s.path_query, "/?x=1");
        assert!(split_url("ftp://h/x").is_err());
        assert!(split_url("data:text/plain,hi").is_err());
    }

    #[test]
    fn forms_parse_only_when_lossless() {
        let f = parse_form("q=%EA%B2%80%EC%83%89+%EC%97%94%EC%A7%84&page=2").unwrap();
        assert_eq!(f["q"], "검색 엔진");
        assert_eq!(f["page"], "2");
        assert!(parse_form("a=1&a=2").is_none());
        assert!(parse_form("just text").is_none());
        assert!(parse_form("a=%zz").is_none());
        assert!(parse_form("a=%FF").is_none());
    }

    #[test]
    fn yaml_is_pruned_and_parses_back() {
        let step =
            request_step("GET /".into(), "GET", "/".into(), vec![], Body::None, None).unwrap();
        let cfg = imported_config(
            Some("http://h:8080".into()),
            Defaults::default(),
            vec![step],
        );
        let y = to_yaml(&cfg);
        assert!(!y.contains("null"), "{y}");
        assert!(!y.contains("insecure"), "{y}");
        assert!(!y.contains("{}"), "{y}");
        assert_eq!(crate::parse_str(&y, "x").unwrap(), cfg);
        let y = to_yaml_with_source(&cfg, "a\nb.har");
        assert!(y.starts_with("# imported by pado from a b.har\n"), "{y}");
        assert_eq!(crate::parse_str(&y, "x").unwrap(), cfg);
    }
}

//! Browser recordings (HAR 1.2, as saved by the developer tools of every browser) to a
//! scenario: the quickest way from "what the user clicked" to a load test that repeats
//! it, with the recorded pauses as think time.

use serde_json::Value;

use super::multipart::{self, Part};
use super::{
    classify_body, header_value, imported_config, is_automatic_header, mime_essence,
    percent_decode, percent_encode, push_header, remove_header, request_step, split_url,
    stable_dur, step_name, valid_header, Body, ImportError, ImportOptions, Imported, SplitUrl,
    METHODS,
};
use crate::model::*;

/// Pauses shorter than this are the browser's own work, not the user's.
const MIN_THINK_MS: f64 = 100.0;

/// Path endings of static assets (dropped unless `include_static`).
const STATIC_EXT: [&str; 17] = [
    ".js", ".mjs", ".css", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".avif", ".woff",
    ".woff2", ".ttf", ".otf", ".eot", ".ico", ".map",
];

/// One recorded request that survived filtering.
struct Rec {
    index: usize,
    method: String,
    url: SplitUrl,
    headers: Vec<(String, String)>,
    body: Body,
    status: Option<u16>,
    /// The HTTP major version the browser spoke for it (`httpVersion`; 1 when not
    /// said).
    version: u8,
    started_ms: Option<f64>,
    time_ms: f64,
}

/// Turn a HAR recording into a one-scenario configuration whose `flow` replays the
/// requests in recorded order: requests to the most common origin become paths under
/// `target`, the others stay absolute; pauses of 100 ms or more between one request's
/// end (the latest end so far, as browsers overlap requests) and the next start become
/// `{ think }` steps, rounded to 10 ms; headers the client sets by itself (Host,
/// Cookie, `sec-*`, pseudo headers, conditional `If-*` ...) are dropped and headers
/// every request shares move to `defaults.headers`; JSON and form bodies are written
/// as `json:` / `form:` so they can be edited. The load (constant-vus, 1 VU, 1m) is a
/// starting point. A recorded 304 is checked as 200, since the conditional headers
/// that caused it are not replayed.
///
/// Bodies go out as the browser sent them: the recorded text byte for byte (as
/// `json:`/`form:` only when that is the same bytes), a `postData.encoding: base64`
/// body decoded, a form upload saved as `postData.params` rebuilt as its
/// `multipart/form-data` body with its file parts; `queryString` entries missing
/// from the URL are added to it.
pub fn from_har(text: &str, opts: &ImportOptions) -> Result<Config, ImportError> {
    import_har(text, opts).map(|i| i.config)
}

/// Why a HAR file could not be imported: the file named, then the reason.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct HarFileError {
    /// The file.
    pub path: std::path::PathBuf,
    /// Why (it cannot be read, is too large, or is not a HAR recording).
    pub reason: String,
}

/// Reads a HAR file (at most [`crate::limits::MAX_DATA_BYTES`]) and imports it;
/// also the name the written scenario cites as its source (the file's name).
pub fn import_har_file(
    path: &std::path::Path,
    opts: &ImportOptions,
) -> Result<(Imported, String), HarFileError> {
    let fail = |reason: String| HarFileError {
        path: path.to_path_buf(),
        reason,
    };
    let text = crate::limits::read_capped_string(path, crate::limits::MAX_DATA_BYTES)
        .map_err(|e| fail(e.to_string()))?;
    let imported = import_har(&text, opts).map_err(|e| fail(e.to_string()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((imported, name))
}

/// [`from_har`] with the notes on what could not be replayed as recorded (a file
/// part saved without its content).
pub fn import_har(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    let root: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| ImportError::NotJson(e.to_string()))?;
    let entries = root
        .get("log")
        .and_then(|l| l.get("entries"))
        .and_then(Value::as_array)
        .ok_or(ImportError::NotHar)?;

    let mut kept: Vec<Rec> = Vec::new();
    let mut notes = Vec::new();
    let mut dropped = Dropped::default();
    for (index, e) in entries.iter().enumerate() {
        if let Some(rec) = recorded_entry(index, e, opts, &mut dropped, &mut notes)? {
            kept.push(rec);
        }
    }

    if kept.is_empty() {
        let Dropped {
            n_static,
            n_scheme,
            n_host,
            n_method,
        } = dropped;
        return Err(ImportError::NoRequests(format!(
            "{} entries; dropped {n_static} static assets, {n_scheme} non-HTTP URLs, \
             {n_host} requests to other hosts, {n_method} with unsupported methods{}",
            entries.len(),
            if n_static > 0 {
                " (include static assets to keep them)"
            } else {
                ""
            }
        )));
    }

    let target = most_common_origin(&kept);
    let mut defaults = Defaults {
        http: recorded_protocol(&kept, &target),
        ..Default::default()
    };
    for (name, value) in common_headers(&kept) {
        defaults.headers.insert(name.clone(), value.clone());
        for r in &mut kept {
            r.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        }
    }
    let flow = replay_flow(kept, &target, opts)?;
    Ok(Imported {
        config: imported_config(Some(target), defaults, flow),
        notes,
    })
}

/// How many entries were left out, and why: said when nothing is left to replay.
#[derive(Default)]
struct Dropped {
    n_static: usize,
    n_scheme: usize,
    n_host: usize,
    n_method: usize,
}

/// One HAR entry as a [`Rec`], or `None` when the options (or its scheme or method)
/// leave it out, counted in `dropped`.
fn recorded_entry(
    index: usize,
    e: &Value,
    opts: &ImportOptions,
    dropped: &mut Dropped,
    notes: &mut Vec<String>,
) -> Result<Option<Rec>, ImportError> {
    let bad = |reason: String| ImportError::BadEntry { index, reason };
    let req = e
        .get("request")
        .filter(|r| r.is_object())
        .ok_or_else(|| bad("no `request` object".into()))?;
    let method = req
        .get("method")
        .and_then(Value::as_str)
        .map(|m| m.trim().to_ascii_uppercase())
        .filter(|m| !m.is_empty())
        .ok_or_else(|| bad("request.method is missing".into()))?;
    let raw_url = req
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("request.url is missing".into()))?;
    let lower = raw_url.trim_start().to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        // data:, blob:, ws:, chrome-extension: ... never an HTTP request.
        dropped.n_scheme += 1;
        return Ok(None);
    }
    let mut url = split_url(raw_url).map_err(|r| bad(format!("request.url `{raw_url}`: {r}")))?;
    add_recorded_query(&mut url, req.get("queryString"));
    if !opts.include_static && is_static(&url.path_query) {
        dropped.n_static += 1;
        return Ok(None);
    }
    if let Some(f) = &opts.host_filter {
        if !host_matches(f, &url) {
            dropped.n_host += 1;
            return Ok(None);
        }
    }
    if !METHODS.contains(&method.as_str()) {
        dropped.n_method += 1;
        return Ok(None);
    }

    let mut headers = recorded_headers(req).map_err(bad)?;
    let body = match req.get("postData") {
        Some(pd) => recorded_body(pd, &mut headers, index, notes).map_err(bad)?,
        None => Body::None,
    };

    let status = e
        .get("response")
        .and_then(|r| r.get("status"))
        .and_then(Value::as_u64)
        .filter(|s| (100..=599).contains(s))
        .map(|s| if s == 304 { 200 } else { s as u16 });
    let started_ms = e
        .get("startedDateTime")
        .and_then(Value::as_str)
        .and_then(parse_time_ms);
    let time_ms = e
        .get("time")
        .and_then(Value::as_f64)
        .filter(|t| t.is_finite() && *t >= 0.0)
        .unwrap_or(0.0);
    Ok(Some(Rec {
        index,
        method,
        url,
        headers,
        body,
        status,
        version: recorded_version(e),
        started_ms,
        time_ms,
    }))
}

/// The request's headers worth replaying: those the client sets by itself (and
/// malformed ones) dropped; a `{{` is refused, as a scenario would read it as a
/// template.
fn recorded_headers(req: &Value) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for h in req
        .get("headers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let (Some(name), Some(value)) = (
            h.get("name").and_then(Value::as_str),
            h.get("value").and_then(Value::as_str),
        ) else {
            continue;
        };
        let name = name.trim();
        if !is_automatic_header(name, true) && valid_header(name, value) {
            if value.contains("{{") {
                return Err(format!(
                    "header `{name}` contains `{{{{`, which a scenario file reads as a template (there is no escape for it yet); edit the recording"
                ));
            }
            push_header(&mut headers, name, value);
        }
    }
    Ok(headers)
}

/// The HTTP major version of an entry: browsers write `HTTP/2.0`, `h2`, `http/2`,
/// `h3`... on the request or only on the response; 1 when neither says.
fn recorded_version(e: &Value) -> u8 {
    ["request", "response"]
        .iter()
        .filter_map(|side| {
            let v = e.get(side)?.get("httpVersion")?.as_str()?;
            let v = v.trim().to_ascii_lowercase();
            if v.starts_with("http/3") || v == "h3" {
                Some(3)
            } else if v.starts_with("http/2") || v == "h2" {
                Some(2)
            } else {
                None
            }
        })
        .max()
        .unwrap_or(1)
}

/// The kept requests as a flow in recorded order, with the user's pauses between
/// them as `{ think }` steps.
fn replay_flow(
    kept: Vec<Rec>,
    target: &str,
    opts: &ImportOptions,
) -> Result<Vec<Step>, ImportError> {
    let mut flow = Vec::new();
    let mut last_end: Option<f64> = None;
    for r in kept {
        if let (Some(end), Some(start)) = (last_end, r.started_ms) {
            let gap = start - end;
            if (MIN_THINK_MS..1e12).contains(&gap) {
                let ms = ((gap / 10.0).round() as u64) * 10;
                flow.push(Step {
                    think: Some(Think::Fixed(stable_dur(std::time::Duration::from_millis(
                        ms,
                    )))),
                    ..Default::default()
                });
            }
        }
        if let Some(s) = r.started_ms {
            let end = s + r.time_ms;
            last_end = Some(last_end.map_or(end, |l: f64| l.max(end)));
        }
        let to_target = r.url.origin == target;
        let host = r.url.origin.split_once("://").map(|x| x.1).unwrap_or("");
        let name = step_name(
            &r.method,
            &r.url.path_query,
            if to_target { None } else { Some(host) },
        );
        let url = if to_target {
            r.url.path_query.clone()
        } else {
            r.url.absolute.clone()
        };
        let index = r.index;
        let mut step = request_step(name, &r.method, url, r.headers, r.body, None)
            .map_err(|reason| ImportError::BadEntry { index, reason })?;
        if opts.checks {
            if let Some(s) = r.status {
                step.check = Some(Check {
                    status: Some(StatusMatch::One(s)),
                    ..Default::default()
                });
            }
        }
        flow.push(step);
    }
    Ok(flow)
}

/// The protocol the browser used with the target: HTTP/2 when every request to it
/// was HTTP/2, `auto` (ALPN decides) when some were (or HTTP/3, which pado does not
/// speak: the same servers offer HTTP/2 over TLS), nothing (HTTP/1.1) otherwise.
fn recorded_protocol(kept: &[Rec], target: &str) -> Option<crate::HttpVersion> {
    let to_target: Vec<&Rec> = kept.iter().filter(|r| r.url.origin == target).collect();
    let https = target.starts_with("https://");
    if to_target.iter().all(|r| r.version == 1) {
        None
    } else if https && to_target.iter().all(|r| r.version == 2) {
        Some(crate::HttpVersion::Http2)
    } else {
        // Some of each, HTTP/3, or a recorded HTTP/2 over plain http (h2c is rare
        // in browsers): ALPN decides, which over plain http means HTTP/1.1.
        Some(crate::HttpVersion::Auto)
    }
}

/// The body a recorded `postData` stands for: its `text` (decoded when `encoding`
/// is `base64`), or, without text, its `params` as the browser sent them: a
/// `multipart/form-data` body with file parts when the content type says
/// multipart, `name=value&...` otherwise.
fn recorded_body(
    pd: &Value,
    headers: &mut Vec<(String, String)>,
    index: usize,
    notes: &mut Vec<String>,
) -> Result<Body, String> {
    let mime = pd.get("mimeType").and_then(Value::as_str);
    let text = pd.get("text").and_then(Value::as_str).unwrap_or("");
    let base64 = pd
        .get("encoding")
        .and_then(Value::as_str)
        .is_some_and(|e| e.trim().eq_ignore_ascii_case("base64"));
    if base64 && !text.is_empty() {
        let bytes = crate::decode_body_base64(text).map_err(|e| {
            format!("postData.text is marked `encoding: base64` but is not base64: {e}")
        })?;
        return Ok(match String::from_utf8(bytes) {
            Ok(t) => classify_body(&t, mime, headers),
            Err(e) => {
                if header_value(headers, "content-type").is_none() {
                    if let Some(m) = mime.filter(|m| !m.is_empty()) {
                        headers.push(("Content-Type".into(), m.to_string()));
                    }
                }
                Body::Bytes(e.into_bytes())
            }
        });
    }
    if !text.is_empty() {
        return Ok(classify_body(text, mime, headers));
    }
    let params: &[Value] = pd
        .get("params")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let ct = header_value(headers, "content-type")
        .or(mime)
        .unwrap_or("")
        .to_string();
    if !mime_essence(&ct).starts_with("multipart/") {
        return Ok(classify_body(&params_text(params), mime, headers));
    }
    let mut parts = Vec::new();
    for (i, p) in params.iter().enumerate() {
        let name = p
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("postData.params[{i}] has no name"))?;
        let field = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
        let part = Part {
            name: name.to_string(),
            value: field("value").unwrap_or_default(),
            file_name: field("fileName"),
            content_type: field("contentType"),
        };
        if let (Some(f), true) = (&part.file_name, part.value.is_empty()) {
            notes.push(format!(
                "log.entries[{index}]: the file `{f}` of field `{name}` was saved without its content; the replay sends it empty"
            ));
        }
        parts.push(part);
    }
    if parts.is_empty() {
        return Ok(Body::None);
    }
    let (boundary, body) = multipart::build(&parts, multipart::boundary_of(&ct).as_deref());
    let essence = mime_essence(&ct);
    remove_header(headers, "content-type");
    headers.push((
        "Content-Type".into(),
        format!("{essence}; boundary={boundary}"),
    ));
    Ok(Body::Raw(body))
}

/// A form body rebuilt from `postData.params` when the recording has no `text`.
fn params_text(params: &[Value]) -> String {
    params
        .iter()
        .filter_map(|p| {
            let name = p.get("name")?.as_str()?;
            let value = p.get("value").and_then(Value::as_str).unwrap_or("");
            Some(format!("{name}={value}"))
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Add the recorded `queryString` entries the URL lacks (some tools save the query
/// only there). An entry is in the URL when a pair of the URL's query has its name
/// and value, as written or percent-decoded; each URL pair answers one entry, so a
/// repeated name is added as often as it is missing. Added pairs are written
/// percent-encoded.
fn add_recorded_query(url: &mut SplitUrl, query_string: Option<&Value>) {
    let Some(entries) = query_string.and_then(Value::as_array) else {
        return;
    };
    let query = url.path_query.split_once('?').map_or("", |(_, q)| q);
    let mut present: Vec<Option<(String, String)>> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Some((k.to_string(), v.to_string()))
        })
        .collect();
    let same = |written: &str, recorded: &str| {
        written == recorded || percent_decode(written, true).as_deref() == Some(recorded)
    };
    let mut added = Vec::new();
    for e in entries {
        let Some(name) = e.get("name").and_then(Value::as_str) else {
            continue;
        };
        let value = e.get("value").and_then(Value::as_str).unwrap_or("");
        let found = present.iter_mut().find(|p| {
            p.as_ref()
                .is_some_and(|(k, v)| same(k, name) && same(v, value))
        });
        match found {
            Some(slot) => *slot = None,
            None => added.push(format!(
                "{}={}",
                percent_encode(name),
                percent_encode(value)
            )),
        }
    }
    if added.is_empty() {
        return;
    }
    let extra = added.join("&");
    for s in [&mut url.path_query, &mut url.absolute] {
        if !s.contains('?') {
            s.push('?');
        } else if !s.ends_with(['?', '&']) {
            s.push('&');
        }
        s.push_str(&extra);
    }
}

/// Whether a path (with query) names a static asset.
fn is_static(path_query: &str) -> bool {
    let path = path_query
        .split('?')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    STATIC_EXT.iter().any(|e| path.ends_with(e))
}

/// `example.com`, `example.com:8080` or `https://example.com` against a URL.
fn host_matches(filter: &str, url: &SplitUrl) -> bool {
    let f = filter.trim().to_ascii_lowercase();
    if f.contains("://") {
        return match split_url(&f) {
            Ok(s) => s.host == url.host && s.port == url.port,
            Err(_) => false,
        };
    }
    let f = f.trim_end_matches('/');
    if f.contains(':') && !f.starts_with('[') || f.contains("]:") {
        f == format!("{}:{}", url.host, url.port)
    } else {
        f == url.host
    }
}

/// The origin most requests go to (the first one on a tie): the natural `target`.
fn most_common_origin(recs: &[Rec]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in recs {
        match counts.iter_mut().find(|(o, _)| *o == r.url.origin) {
            Some((_, n)) => *n += 1,
            None => counts.push((&r.url.origin, 1)),
        }
    }
    let mut best = counts[0];
    for c in &counts[1..] {
        if c.1 > best.1 {
            best = *c;
        }
    }
    best.0.to_string()
}

/// Headers (name and value) every request carries, except `Content-Type`, which
/// belongs to each body.
fn common_headers(recs: &[Rec]) -> Vec<(String, String)> {
    recs[0]
        .headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("content-type"))
        .filter(|(n, v)| {
            recs[1..].iter().all(|r| {
                r.headers
                    .iter()
                    .any(|(n2, v2)| n2.eq_ignore_ascii_case(n) && v2 == v)
            })
        })
        .cloned()
        .collect()
}

/// Milliseconds since the Unix epoch of an ISO 8601 time as HAR writes it
/// (`2024-03-01T10:00:00.123+09:00`, `...Z`; without an offset, UTC); `None` if it
/// is not one.
fn parse_time_ms(s: &str) -> Option<f64> {
    use time::format_description::well_known::Iso8601;
    let s = s.trim();
    let t = time::OffsetDateTime::parse(s, &Iso8601::DEFAULT)
        .or_else(|_| time::PrimitiveDateTime::parse(s, &Iso8601::DEFAULT).map(|t| t.assume_utc()))
        .ok()?;
    Some(t.unix_timestamp_nanos() as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::to_yaml;
    use crate::HttpVersion;
    use std::time::Duration;

    /// Five entries: a page API call, a static script, a JSON POST with Hangul, a form
    /// POST, and a call to a second origin; gaps of 0.5 s and 2 s.
    const HAR: &str = r#"{
      "log": {
        "version": "1.2",
        "creator": { "name": "WebInspector", "version": "537.36" },
        "entries": [
          {
            "startedDateTime": "2024-03-01T10:00:00.000+09:00",
            "time": 120.5,
            "request": {
              "method": "GET",
              "url": "https://shop.example.com/api/posts/123/comments/9f1c2ab34de56f70?q=%EA%B2%80%EC%83%89",
              "headers": [
                { "name": ":authority", "value": "shop.example.com" },
                { "name": "accept", "value": "application/json" },
                { "name": "accept-encoding", "value": "gzip, br" },
                { "name": "cookie", "value": "sid=abc" },
                { "name": "sec-ch-ua", "value": "\"Chromium\";v=\"124\"" },
                { "name": "user-agent", "value": "Mozilla/5.0" },
                { "name": "x-trace", "value": "t1" }
              ]
            },
            "response": { "status": 200 }
          },
          {
            "startedDateTime": "2024-03-01T01:00:00.050Z",
            "time": 30,
            "request": {
              "method": "GET",
              "url": "https://shop.example.com/static/app.js?v=3",
              "headers": [ { "name": "accept", "value": "*/*" } ]
            },
            "response": { "status": 200 }
          },
          {
            "startedDateTime": "2024-03-01T01:00:00.620Z",
            "time": 80,
            "request": {
              "method": "POST",
              "url": "https://shop.example.com/api/posts",
              "headers": [
                { "name": "accept", "value": "application/json" },
                { "name": "content-type", "value": "application/json;charset=UTF-8" },
                { "name": "content-length", "value": "40" },
                { "name": "user-agent", "value": "Mozilla/5.0" }
              ],
              "postData": {
                "mimeType": "application/json;charset=UTF-8",
                "text": "{\"title\":\"안녕하세요\",\"tags\":[\"검색\",\"엔진\"],\"n\":1}"
              }
            },
            "response": { "status": 201 }
          },
          {
            "startedDateTime": "2024-03-01T01:00:02.700Z",
            "time": 50,
            "request": {
              "method": "POST",
              "url": "https://shop.example.com/login",
              "headers": [
                { "name": "Accept", "value": "application/json" },
                { "name": "Content-Type", "value": "application/x-www-form-urlencoded" },
                { "name": "User-Agent", "value": "Mozilla/5.0" }
              ],
              "postData": {
                "mimeType": "application/x-www-form-urlencoded",
                "text": "user=%ED%99%8D%EA%B8%B8%EB%8F%99&password=p%40ss+word",
                "params": [ { "name": "user", "value": "%ED%99%8D%EA%B8%B8%EB%8F%99" } ]
              }
            },
            "response": { "status": 302 }
          },
          {
            "startedDateTime": "2024-03-01T01:00:02.760Z",
            "time": 10,
            "request": {
              "method": "GET",
              "url": "https://api.other.com:8443/v1/users/550e8400-e29b-41d4-a716-446655440000#frag",
              "headers": [
                { "name": "accept", "value": "application/json" },
                { "name": "user-agent", "value": "Mozilla/5.0" }
              ]
            },
            "response": { "status": 304 }
          }
        ]
      }
    }"#;

    fn req(s: &Step) -> &RequestFull {
        match s.request.as_ref().unwrap() {
            RequestSpec::Full(f) => f,
            r => panic!("expected the full form: {r:?}"),
        }
    }

    fn line(s: &Step) -> &str {
        match s.request.as_ref().unwrap() {
            RequestSpec::Line(l) => l,
            r => panic!("expected the short form: {r:?}"),
        }
    }

    /// A recording of GETs to `origin`, each with its `httpVersion`.
    fn har_with_versions(origin: &str, versions: &[&str]) -> String {
        let entries: Vec<String> = versions
            .iter()
            .enumerate()
            .map(|(i, v)| {
                format!(
                    r#"{{"request": {{"method": "GET", "url": "{origin}/api/{i}", "httpVersion": "{v}", "headers": []}}, "response": {{"status": 200, "httpVersion": "{v}"}}}}"#
                )
            })
            .collect();
        format!(r#"{{"log": {{"entries": [{}]}}}}"#, entries.join(","))
    }

    #[test]
    fn the_protocol_the_browser_used_is_kept() {
        let proto = |origin: &str, v: &[&str]| {
            from_har(&har_with_versions(origin, v), &ImportOptions::default())
                .unwrap()
                .defaults
                .http
        };
        let https = "https://shop.example.com";
        assert_eq!(proto(https, &["HTTP/2.0", "h2"]), Some(HttpVersion::Http2));
        assert_eq!(
            proto(https, &["http/2.0", "HTTP/1.1"]),
            Some(HttpVersion::Auto)
        );
        assert_eq!(proto(https, &["h3", "h3"]), Some(HttpVersion::Auto));
        assert_eq!(proto(https, &["HTTP/1.1", "HTTP/1.1"]), None);
        assert_eq!(
            proto("http://127.0.0.1:8080", &["HTTP/2.0"]),
            Some(HttpVersion::Auto)
        );
        // What the file says is what a run reads back.
        let cfg = from_har(
            &har_with_versions(https, &["h2"]),
            &ImportOptions::default(),
        )
        .unwrap();
        let yaml = to_yaml(&cfg);
        assert!(
            yaml.contains("http: '2'") || yaml.contains("http: \"2\"") || yaml.contains("http: 2"),
            "{yaml}"
        );
    }

    #[test]
    fn imports_the_recording() {
        let cfg = from_har(HAR, &ImportOptions::default()).unwrap();
        assert_eq!(cfg.target.as_deref(), Some("https://shop.example.com"));
        assert_eq!(cfg.name.as_deref(), Some("shop.example.com"));
        let d = &cfg.defaults.headers;
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d["accept"], "application/json");
        assert_eq!(d["user-agent"], "Mozilla/5.0");
        let (name, sc) = &cfg.scenarios[0];
        assert_eq!(name, "main");
        assert_eq!(sc.executor, ExecutorKind::ConstantVus);
        assert_eq!(sc.vus, Some(1));
        assert_eq!(sc.duration, Some(crate::Dur::from_secs(60)));
        let f = &sc.flow;
        let names: Vec<_> = f.iter().map(|s| s.name.as_deref()).collect();
        assert_eq!(
            names,
            vec![
                Some("GET /api/posts/{id}/comments/{id}"),
                None,
                Some("POST /api/posts"),
                None,
                Some("POST /login"),
                Some("GET api.other.com:8443/v1/users/{id}"),
            ]
        );
        // 1: only the non-common header stays; the URL is kept percent-encoded.
        let r0 = req(&f[0]);
        assert_eq!(
            r0.url,
            "/api/posts/123/comments/9f1c2ab34de56f70?q=%EA%B2%80%EC%83%89"
        );
        assert_eq!(r0.headers.len(), 1);
        assert_eq!(r0.headers["x-trace"], "t1");
        assert_eq!(
            f[0].check.as_ref().unwrap().status,
            Some(StatusMatch::One(200))
        );
        // The static script is gone; its neighbours are 0.5 s apart (end 120.5 ms,
        // next start 620 ms: 499.5 ms rounds to 500 ms).
        assert_eq!(
            f[1].think,
            Some(Think::Fixed(crate::Dur(Duration::from_millis(500))))
        );
        // 2: JSON with Hangul, keys not in sorted order: sent as recorded, with
        // the recorded content type.
        let r2 = req(&f[2]);
        assert_eq!(r2.method.as_deref(), Some("POST"));
        assert_eq!(r2.json, None);
        assert_eq!(
            r2.body.as_deref(),
            Some("{\"title\":\"안녕하세요\",\"tags\":[\"검색\",\"엔진\"],\"n\":1}")
        );
        assert_eq!(
            r2.headers.iter().collect::<Vec<_>>(),
            [(
                &"content-type".to_string(),
                &"application/json;charset=UTF-8".to_string()
            )]
        );
        assert_eq!(
            f[2].check.as_ref().unwrap().status,
            Some(StatusMatch::One(201))
        );
        // 2 s gap (end 700 ms, next start 2700 ms).
        assert_eq!(
            f[3].think,
            Some(Think::Fixed(crate::Dur(Duration::from_secs(2))))
        );
        // 3: a form written with `+` for a space and fields out of name order: a
        // `form:` would send other bytes, so the recorded text is kept.
        let r4 = req(&f[4]);
        assert_eq!(r4.form, None);
        assert_eq!(
            r4.body.as_deref(),
            Some("user=%ED%99%8D%EA%B8%B8%EB%8F%99&password=p%40ss+word")
        );
        // 4: other origin, absolute, no fragment, 10 ms gap is no think; 304 -> 200.
        assert_eq!(
            line(&f[5]),
            "GET https://api.other.com:8443/v1/users/550e8400-e29b-41d4-a716-446655440000"
        );
        assert_eq!(
            f[5].check.as_ref().unwrap().status,
            Some(StatusMatch::One(200))
        );

        let y = to_yaml(&cfg);
        assert!(y.contains("안녕하세요"), "{y}");
        assert!(
            y.contains("%ED%99%8D%EA%B8%B8%EB%8F%99&password=p%40ss+word"),
            "{y}"
        );
        assert!(y.contains("think: 500ms"), "{y}");
        assert!(y.contains("think: 2s"), "{y}");
        assert_eq!(crate::parse_str(&y, "x").unwrap(), cfg, "{y}");
        if std::env::var_os("PADO_SHOW_YAML").is_some() {
            println!("{y}");
        }
    }

    #[test]
    fn options_filter_and_checks() {
        let opts = ImportOptions {
            include_static: true,
            checks: false,
            host_filter: Some("SHOP.example.com".into()),
        };
        let cfg = from_har(HAR, &opts).unwrap();
        let f = &cfg.scenarios[0].1.flow;
        let reqs: Vec<&Step> = f.iter().filter(|s| s.request.is_some()).collect();
        assert_eq!(reqs.len(), 4);
        assert!(reqs.iter().all(|s| s.check.is_none()));
        assert_eq!(reqs[1].name.as_deref(), Some("GET /static/app.js"));
        assert_eq!(crate::parse_str(&to_yaml(&cfg), "x").unwrap(), cfg);

        for f in ["api.other.com:8443", "https://api.other.com:8443/"] {
            let opts = ImportOptions {
                host_filter: Some(f.into()),
                ..Default::default()
            };
            let cfg = from_har(HAR, &opts).unwrap();
            assert_eq!(cfg.target.as_deref(), Some("https://api.other.com:8443"));
            assert_eq!(cfg.scenarios[0].1.flow.len(), 1);
        }
        let opts = ImportOptions {
            host_filter: Some("nowhere.example".into()),
            ..Default::default()
        };
        let e = from_har(HAR, &opts).unwrap_err().to_string();
        assert!(e.contains("no requests left"), "{e}");
    }

    #[test]
    fn errors_name_the_problem() {
        let e = from_har("{}", &ImportOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), "not a HAR file: missing log.entries");
        let e = from_har("<html>", &ImportOptions::default()).unwrap_err();
        assert!(e.to_string().starts_with("not a HAR file"), "{e}");
        let e = from_har(
            r#"{"log":{"entries":[{"request":{"method":"GET","url":"http://h/"}},{"request":{"method":"GET"}}]}}"#,
            &ImportOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "HAR entry log.entries[1]: request.url is missing"
        );
        let e = from_har(r#"{"log":{"entries":[]}}"#, &ImportOptions::default()).unwrap_err();
        assert!(e.to_string().contains("no requests left"), "{e}");
    }

    #[test]
    fn data_urls_and_odd_bodies() {
        let har = r#"{"log":{"entries":[
          {"request":{"method":"GET","url":"data:image/png;base64,AAAA"}},
          {"request":{"method":"PUT","url":"http://h:8080/raw",
            "headers":[{"name":"Content-Type","value":"text/plain"}],
            "postData":{"mimeType":"text/plain","text":"line1\nline2 한글"}}},
          {"request":{"method":"POST","url":"http://h:8080/dup",
            "postData":{"mimeType":"application/x-www-form-urlencoded","text":"a=1&a=2"}}},
          {"request":{"method":"POST","url":"http://h:8080/nojson",
            "postData":{"mimeType":"application/json","text":"{broken"}}}
        ]}}"#;
        let cfg = from_har(har, &ImportOptions::default()).unwrap();
        let f = &cfg.scenarios[0].1.flow;
        assert_eq!(f.len(), 3);
        assert_eq!(req(&f[0]).body.as_deref(), Some("line1\nline2 한글"));
        assert_eq!(req(&f[0]).headers["Content-Type"], "text/plain");
        assert_eq!(req(&f[1]).body.as_deref(), Some("a=1&a=2"));
        assert_eq!(
            req(&f[1]).headers["Content-Type"],
            "application/x-www-form-urlencoded"
        );
        assert_eq!(req(&f[2]).body.as_deref(), Some("{broken"));
        assert_eq!(crate::parse_str(&to_yaml(&cfg), "x").unwrap(), cfg);
    }

    #[test]
    fn template_braces_are_kept_literal() {
        let har = r#"{"log":{"entries":[
          {"request":{"method":"GET","url":"http://h/a/{{x}}?q={{y}}"}},
          {"request":{"method":"POST","url":"http://h/j",
            "postData":{"mimeType":"application/json","text":"{\"t\":\"{{ name }}\",\"o\":{\"{{k\":[{}]}}"}}},
          {"request":{"method":"POST","url":"http://h/f",
            "postData":{"mimeType":"application/x-www-form-urlencoded","text":"a=%7B%7Bb%7D%7D"}}}
        ]}}"#;
        let cfg = from_har(har, &ImportOptions::default()).unwrap();
        let f = &cfg.scenarios[0].1.flow;
        assert_eq!(line(&f[0]), "GET /a/%7B%7Bx%7D%7D?q=%7B%7By%7D%7D");
        // A body with `{{` goes out byte for byte as `body_base64` (never read as
        // a template).
        let b64 = req(&f[1]).body_base64.clone().unwrap();
        assert_eq!(
            crate::decode_body_base64(&b64).unwrap(),
            br#"{"t":"{{ name }}","o":{"{{k":[{}]}}"#
        );
        assert_eq!(req(&f[1]).body, None);
        assert_eq!(req(&f[1]).headers["Content-Type"], "application/json");
        assert_eq!(req(&f[2]).body.as_deref(), Some("a=%7B%7Bb%7D%7D"));
        assert_eq!(crate::parse_str(&to_yaml(&cfg), "x").unwrap(), cfg);

        let har = r#"{"log":{"entries":[{"request":{"method":"GET","url":"http://h/",
          "headers":[{"name":"x-t","value":"{{a}}"}]}}]}}"#;
        let e = from_har(har, &ImportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("HAR entry log.entries[0]: header `x-t`"),
            "{e}"
        );
    }

    /// One POST entry with this `postData` (and request headers), shaped as
    /// Firefox saves it (`cookies`, `queryString`, `headersSize`, `bodySize`).
    fn post_entry(headers: &str, post_data: &str) -> String {
        format!(
            r#"{{"log":{{"version":"1.2","creator":{{"name":"Firefox","version":"124.0"}},"entries":[
              {{"startedDateTime":"2024-03-01T10:00:00.000+09:00","time":12,
                "request":{{"bodySize":-1,"method":"POST","url":"http://h:8080/up","httpVersion":"HTTP/1.1",
                  "headers":[{headers}],"cookies":[],"queryString":[],"headersSize":321,
                  "postData":{post_data}}},
                "response":{{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","headers":[],"cookies":[],
                  "content":{{"mimeType":"text/plain","size":0,"text":""}},"redirectURL":"","headersSize":0,"bodySize":0}},
                "cache":{{}},"timings":{{"blocked":0,"dns":0,"connect":0,"ssl":0,"send":0,"wait":12,"receive":0}}}}
            ]}}}}"#
        )
    }

    #[test]
    fn json_bodies_go_out_as_recorded() {
        let text = "{\"id\":12345678901234567890123, \"b\": 1,\n \"a\": [0.10, 1e2]}";
        let har = post_entry(
            r#"{"name":"Content-Type","value":"application/json"}"#,
            &serde_json::json!({"mimeType": "application/json", "text": text}).to_string(),
        );
        let cfg = from_har(&har, &ImportOptions::default()).unwrap();
        let r = req(&cfg.scenarios[0].1.flow[0]);
        assert_eq!(r.json, None);
        assert_eq!(r.body.as_deref(), Some(text));
        assert_eq!(r.headers["Content-Type"], "application/json");
        assert_eq!(crate::parse_str(&to_yaml(&cfg), "x").unwrap(), cfg);
        // Compact, keys in order, plain numbers: `json:` is the same bytes.
        let har = post_entry(
            "",
            r#"{"mimeType":"application/json","text":"{\"a\":1,\"b\":[true,\"가\"]}"}"#,
        );
        let cfg = from_har(&har, &ImportOptions::default()).unwrap();
        let r = req(&cfg.scenarios[0].1.flow[0]);
        assert_eq!(r.json, Some(serde_json::json!({"a": 1, "b": [true, "가"]})));
        assert_eq!(r.body, None);
    }

    #[test]
    fn base64_bodies_are_decoded() {
        // UTF-8 text: the decoded text.
        let har = post_entry(
            "",
            r#"{"mimeType":"text/plain;charset=utf-8","encoding":"base64","text":"7JWI64WVIQ=="}"#,
        );
        let cfg = from_har(&har, &ImportOptions::default()).unwrap();
        let r = req(&cfg.scenarios[0].1.flow[0]);
        assert_eq!(r.body.as_deref(), Some("안녕!"));
        assert_eq!(r.headers["Content-Type"], "text/plain;charset=utf-8");
        // Bytes that are not text: the same bytes, as `body_base64`.
        let har = post_entry(
            "",
            r#"{"mimeType":"application/octet-stream","encoding":"base64","text":"AP/+gA=="}"#,
        );
        let cfg = from_har(&har, &ImportOptions::default()).unwrap();
        let r = req(&cfg.scenarios[0].1.flow[0]);
        assert_eq!(r.body, None);
        assert_eq!(
            crate::decode_body_base64(r.body_base64.as_deref().unwrap()).unwrap(),
            [0u8, 0xff, 0xfe, 0x80]
        );
        assert_eq!(crate::parse_str(&to_yaml(&cfg), "x").unwrap(), cfg);
        // Without `encoding`, the same text is sent as text.
        let har = post_entry("", r#"{"mimeType":"text/plain","text":"AP/+gA=="}"#);
        let cfg = from_har(&har, &ImportOptions::default()).unwrap();
        assert_eq!(
            req(&cfg.scenarios[0].1.flow[0]).body.as_deref(),
            Some("AP/+gA==")
        );
        // Marked base64 but not: the entry is named.
        let har = post_entry(
            "",
            r#"{"mimeType":"text/plain","encoding":"base64","text":"%%"}"#,
        );
        let e = from_har(&har, &ImportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("HAR entry log.entries[0]: postData.text is marked"),
            "{e}"
        );
    }

    #[test]
    fn multipart_params_become_the_multipart_body() {
        let ct = "multipart/form-data; boundary=---------------------------4213";
        let har = post_entry(
            &format!(r#"{{"name":"Content-Type","value":"{ct}"}}"#),
            &serde_json::json!({"mimeType": ct, "params": [
                {"name": "title", "value": "제목"},
                {"name": "doc", "value": "a,b\n1,2\n", "fileName": "표.csv", "contentType": "text/csv"},
                {"name": "empty", "value": "", "fileName": "x.bin", "contentType": "application/octet-stream"}
            ]})
            .to_string(),
        );
        let got = import_har(&har, &ImportOptions::default()).unwrap();
        let r = req(&got.config.scenarios[0].1.flow[0]);
        assert_eq!(r.headers["Content-Type"], ct);
        let b = "-----------------------------4213";
        assert_eq!(
            r.body.as_deref().unwrap(),
            format!(
                "{b}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n제목\r\n\
                 {b}\r\nContent-Disposition: form-data; name=\"doc\"; filename=\"표.csv\"\r\nContent-Type: text/csv\r\n\r\na,b\n1,2\n\r\n\
                 {b}\r\nContent-Disposition: form-data; name=\"empty\"; filename=\"x.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\r\n\
                 {b}--\r\n"
            )
        );
        assert_eq!(got.notes.len(), 1, "{:?}", got.notes);
        assert!(got.notes[0].contains("`x.bin`"), "{:?}", got.notes);
        // Without a boundary anywhere: one is chosen and said in the header.
        let har = post_entry(
            "",
            r#"{"mimeType":"multipart/form-data","params":[{"name":"a","value":"1"}]}"#,
        );
        let cfg = from_har(&har, &ImportOptions::default()).unwrap();
        let r = req(&cfg.scenarios[0].1.flow[0]);
        let boundary = crate::import::multipart::boundary_of(&r.headers["Content-Type"]).unwrap();
        assert_eq!(
            r.body.as_deref().unwrap(),
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--{boundary}--\r\n")
        );
        // A urlencoded form in params stays `name=value`.
        let har = post_entry(
            "",
            r#"{"mimeType":"application/x-www-form-urlencoded","params":[{"name":"a","value":"1"},{"name":"b","value":"2"}]}"#,
        );
        let cfg = from_har(&har, &ImportOptions::default()).unwrap();
        let f = req(&cfg.scenarios[0].1.flow[0]).form.clone().unwrap();
        assert_eq!((f["a"].as_str(), f["b"].as_str()), ("1", "2"));
    }

    #[test]
    fn query_string_entries_missing_from_the_url_are_added() {
        let har = r#"{"log":{"entries":[{"request":{"method":"GET",
          "url":"http://h/s?q=%EA%B0%80&page=1",
          "queryString":[{"name":"q","value":"가"},{"name":"page","value":"1"},
                         {"name":"sort","value":"new first"},{"name":"page","value":"2"}]}}]}}"#;
        let cfg = from_har(har, &ImportOptions::default()).unwrap();
        assert_eq!(
            line(&cfg.scenarios[0].1.flow[0]),
            "GET /s?q=%EA%B0%80&page=1&sort=new%20first&page=2"
        );
        // All present: the URL as recorded.
        let har = r#"{"log":{"entries":[{"request":{"method":"GET","url":"http://h/s?a=1",
          "queryString":[{"name":"a","value":"1"}]}}]}}"#;
        let cfg = from_har(har, &ImportOptions::default()).unwrap();
        assert_eq!(line(&cfg.scenarios[0].1.flow[0]), "GET /s?a=1");
        let har = r#"{"log":{"entries":[{"request":{"method":"GET","url":"http://h/s",
          "queryString":[{"name":"k","value":"v"}]}}]}}"#;
        let cfg = from_har(har, &ImportOptions::default()).unwrap();
        assert_eq!(line(&cfg.scenarios[0].1.flow[0]), "GET /s?k=v");
    }

    #[test]
    fn times_parse() {
        let a = parse_time_ms("2024-03-01T10:00:00.000+09:00").unwrap();
        let b = parse_time_ms("2024-03-01T01:00:00Z").unwrap();
        assert_eq!(a, b);
        assert_eq!(parse_time_ms("1970-01-01T00:00:01.5Z"), Some(1500.0));
        assert_eq!(
            parse_time_ms("2000-03-01T00:00:00Z"),
            Some(951_868_800_000.0)
        );
        assert!(parse_time_ms("yesterday").is_none());
        assert!(parse_time_ms("2024-03-01T10:00:00+0x:00").is_none());
    }

    #[test]
    fn random_recordings_round_trip() {
        let mut rng = fastrand::Rng::with_seed(0x9e3779b97f4a7c15);
        let chars: Vec<char> = "ab/?&=%+:;{}\"' \t\n\r\u{0}\u{7f}한글#-_.0123456789\\$[],~*!@"
            .chars()
            .collect();
        let text = |n: usize, rng: &mut fastrand::Rng| -> String {
            (0..rng.usize(..n))
                .map(|_| chars[rng.usize(..chars.len())])
                .collect()
        };
        let methods = [
            "GET", "post", "PUT", "DELETE", "PATCH", "CONNECT", "HEAD", "",
        ];
        let mimes = [
            "application/json",
            "application/x-www-form-urlencoded",
            "text/plain",
            "application/vnd.api+json; charset=utf-8",
            "",
        ];
        let mut imported = 0;
        for _ in 0..400 {
            let mut entries = Vec::new();
            for _ in 0..1 + rng.usize(..5) {
                let host = ["h.com", "h.com:8443", "other.kr"][rng.usize(..3)];
                let scheme = ["http", "https"][rng.usize(..2)];
                let url = format!("{scheme}://{host}/{}", text(20, &mut rng));
                let headers: Vec<_> = (0..rng.usize(..4))
                    .map(|_| {
                        let name = ["accept", "X-A", "bad name", "cookie", "x-b"][rng.usize(..5)];
                        serde_json::json!({ "name": name, "value": text(10, &mut rng) })
                    })
                    .collect();
                let body = match rng.usize(..4) {
                    0 => serde_json::json!({
                        "mimeType": mimes[rng.usize(..5)],
                        "text": text(30, &mut rng),
                    }),
                    1 => serde_json::json!({
                        "mimeType": mimes[rng.usize(..2)],
                        "text": r#"{"k":"값 {x}","n":[1,2.5,null,true],"e":{}}"#,
                    }),
                    2 => serde_json::json!({
                        "mimeType": "application/x-www-form-urlencoded",
                        "text": format!("a={}&b=%EA%B0%80", text(8, &mut rng)),
                    }),
                    _ => serde_json::Value::Null,
                };
                let mut req = serde_json::json!({
                    "method": methods[rng.usize(..8)],
                    "url": url,
                    "headers": headers,
                });
                if !body.is_null() {
                    req["postData"] = body;
                }
                entries.push(serde_json::json!({
                    "startedDateTime": format!("2024-01-01T00:00:{:02}.{:03}Z", rng.u8(..60), rng.u16(..1000)),
                    "time": rng.u32(..3000) as f64 / 7.0,
                    "request": req,
                    "response": { "status": rng.u16(..700) },
                }));
            }
            let har = serde_json::json!({ "log": { "entries": entries } }).to_string();
            for checks in [true, false] {
                let opts = ImportOptions {
                    checks,
                    ..Default::default()
                };
                if let Ok(cfg) = from_har(&har, &opts) {
                    imported += 1;
                    let y = to_yaml(&cfg);
                    match crate::parse_str(&y, "x") {
                        Ok(back) => assert_eq!(back, cfg, "{y}"),
                        Err(e) => panic!("{har}\n{y}\n{e}"),
                    }
                }
            }
        }
        assert!(imported > 200, "only {imported} of 800 imports succeeded");
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = fastrand::Rng::with_seed(0x2545f4914f6cdd1d);
        let alphabet = br#"{}[],:"log entries request method url http://h/ x POST postData text mimeType application/json 0123 .js {{ startedDateTime 2024-01-01T00:00:00Z time -\"#;
        for _ in 0..3000 {
            let len = rng.usize(..120);
            let mut s = String::from(r#"{"log":{"entries":[{"request":"#);
            for _ in 0..len {
                s.push(alphabet[rng.usize(..alphabet.len())] as char);
            }
            for text in [&s[..], &s[28..]] {
                if let Ok(cfg) = from_har(text, &ImportOptions::default()) {
                    let y = to_yaml(&cfg);
                    assert!(crate::parse_str(&y, "x").is_ok(), "{text}\n{y}");
                }
            }
        }
    }

    #[test]
    fn a_har_file_is_imported_under_its_name_and_a_bad_one_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("녹화.har");
        std::fs::write(&path, HAR).unwrap();
        let (imported, name) = import_har_file(&path, &ImportOptions::default()).unwrap();
        assert_eq!(name, "녹화.har");
        assert_eq!(
            imported,
            import_har(HAR, &ImportOptions::default()).unwrap()
        );
        std::fs::write(&path, "[]").unwrap();
        let e = import_har_file(&path, &ImportOptions::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!("{}: not a HAR file: missing log.entries", path.display())
        );
        let missing = dir.path().join("없는.har");
        let e = import_har_file(&missing, &ImportOptions::default()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("{}: ", missing.display())),
            "{e}"
        );
    }
}

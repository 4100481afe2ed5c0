//! Which answer each endpoint gives (the table of `docs/dashboard.md`); the
//! request has passed its gate already.

use pado_h1server::Request;

use crate::server::{Answer, Body, Shared};

/// The page's own files may run only what they bring, never be framed by another
/// site (a framed control button could be clicked for the user).
const PAGE_POLICY: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// A result file opened from the page runs apart from it (its own origin): it
/// cannot reach the page's token.
const FILE_POLICY: &str = "sandbox allow-scripts allow-popups";

/// The answer to `req`.
pub(crate) fn answer(req: &Request, s: &Shared) -> Answer {
    let path = req.path.as_str();
    if req.method == "POST" {
        return crate::control::control(req, s);
    }
    if path == "/" {
        return asset("index.html").unwrap_or_else(not_found);
    }
    if let Some(name) = path.strip_prefix("/assets/") {
        return asset(name).unwrap_or_else(not_found);
    }
    if let Some(name) = path.strip_prefix("/files/") {
        return file(name, s);
    }
    match path {
        "/api/run" => {
            let control = crate::access::has_token(req, &s.token);
            Answer::json_value(200, &crate::state::run_json(s, control))
        }
        "/api/seconds" => match from(req) {
            Ok(n) => Answer::json_text(200, pado_base::lock(&s.store).page(n).to_json()),
            Err(a) => a,
        },
        "/api/state" => Answer::json_value(200, &crate::state::state_json(s)),
        "/api/stream" => match stream_from(req) {
            Ok(n) => Answer {
                status: 200,
                content_type: "text/event-stream",
                headers: vec![("Cache-Control", "no-store".into())],
                body: Body::Stream(n),
            },
            Err(a) => a,
        },
        "/api/baseline" => match &s.baseline {
            Some(b) => Answer::json_text(200, b.json()),
            None => Answer::error_text(
                404,
                "no baseline: start the run with --baseline last|best|RUN_ID",
            ),
        },
        _ => not_found(),
    }
}

/// `?from=N` (default 0).
fn from(req: &Request) -> Result<u32, Answer> {
    match req.query_param("from") {
        None => Ok(0),
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| Answer::error_text(400, format!("from={v}: give a second, 0 or more"))),
    }
}

/// Where a stream starts: `Last-Event-ID` (an `EventSource` reconnecting), else
/// `?from=N`.
fn stream_from(req: &Request) -> Result<u32, Answer> {
    match req.header("last-event-id").map(|v| v.trim().parse::<u32>()) {
        Some(Ok(n)) => Ok(n),
        _ => from(req),
    }
}

fn not_found() -> Answer {
    Answer::error_text(404, "not found")
}

fn asset(name: &str) -> Option<Answer> {
    let a = crate::assets::asset(name)?;
    Some(Answer {
        status: 200,
        content_type: a.content_type,
        headers: vec![
            ("Content-Security-Policy", PAGE_POLICY.into()),
            ("X-Frame-Options", "DENY".into()),
            ("Cache-Control", "no-cache".into()),
        ],
        body: Body::Static(a.body),
    })
}

/// `/files/<name>`: after the run only, names listed from the directory only.
fn file(name: &str, s: &Shared) -> Answer {
    let end = pado_base::lock(&s.end);
    let Some(e) = end.as_ref() else {
        return Answer::error_text(409, "the run is still going: its files come when it ends");
    };
    let Some(path) = crate::files::resolve(&e.dir, &e.files, name) else {
        return not_found();
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return not_found();
    };
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    Answer {
        status: 200,
        content_type: crate::files::content_type(name),
        headers: vec![
            ("Content-Security-Policy", FILE_POLICY.into()),
            ("Cache-Control", "no-store".into()),
            (
                "Content-Disposition",
                if name.ends_with(".html") {
                    "inline".to_string()
                } else {
                    format!("attachment; filename=\"{ascii}\"")
                },
            ),
        ],
        body: Body::File(path, meta.len()),
    }
}

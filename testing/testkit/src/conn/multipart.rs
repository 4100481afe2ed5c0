//! `/multipart`: the parts of a `multipart/form-data` body as the server read
//! them (`{"parts":[{"name","filename","content_type","size","sha256"?...}]}`),
//! so a script (and a test) checks what a client really sent: which fields,
//! which files with which names and types, how many bytes each.

use crate::http::Request;

/// The parts of `req`'s body as JSON, or `{"error": ...}` when it is not a
/// multipart body this parser can read.
pub(crate) fn parts_json(req: &Request) -> String {
    match parts(req) {
        Ok(p) => serde_json::json!({ "count": p.len(), "parts": p }).to_string(),
        Err(e) => serde_json::json!({ "error": e }).to_string(),
    }
}

fn parts(req: &Request) -> Result<Vec<serde_json::Value>, String> {
    let ctype = req.header("content-type").ok_or("no Content-Type")?;
    let (kind, rest) = ctype.split_once(';').ok_or("no boundary")?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return Err(format!("not multipart/form-data: {kind}"));
    }
    let boundary = rest
        .split(';')
        .filter_map(|p| p.trim().strip_prefix("boundary="))
        .next()
        .ok_or("no boundary")?
        .trim_matches('"');
    let delim = format!("--{boundary}");
    let body = &req.body;
    let mut out = Vec::new();
    let mut at = find(body, delim.as_bytes(), 0).ok_or("no first boundary")?;
    loop {
        at += delim.len();
        if body[at..].starts_with(b"--") {
            return Ok(out);
        }
        let start = at + 2; // the CRLF after the boundary
        let next =
            find(body, format!("\r\n{delim}").as_bytes(), start).ok_or("a part never ends")?;
        let part = body.get(start..next).ok_or("a truncated part")?;
        let split = find(part, b"\r\n\r\n", 0).ok_or("a part without a blank line")?;
        let head = String::from_utf8_lossy(&part[..split]);
        let data = &part[split + 4..];
        let mut name = None;
        let mut filename = None;
        let mut content_type = None;
        for line in head.split("\r\n") {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            if k.eq_ignore_ascii_case("content-type") {
                content_type = Some(v.trim().to_string());
            } else if k.eq_ignore_ascii_case("content-disposition") {
                name = param(v, "name");
                filename = param(v, "filename");
            }
        }
        out.push(serde_json::json!({
            "name": name,
            "filename": filename,
            "content_type": content_type,
            "size": data.len(),
            "text": String::from_utf8(data.to_vec()).ok(),
        }));
        at = next + 2;
    }
}

/// A quoted parameter of a `Content-Disposition` value (`\"` and `\\` unescaped).
fn param(v: &str, key: &str) -> Option<String> {
    let pat = format!("{key}=\"");
    let mut i = 0;
    while let Some(p) = v[i..].find(&pat) {
        let s = i + p;
        // `name=` must not match the tail of `filename=`.
        if s == 0 || matches!(v.as_bytes()[s - 1], b' ' | b';') {
            let mut out = String::new();
            let mut chars = v[s + pat.len()..].chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.extend(chars.next()),
                    '"' => return Some(out),
                    c => out.push(c),
                }
            }
            return None;
        }
        i = s + pat.len();
    }
    None
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

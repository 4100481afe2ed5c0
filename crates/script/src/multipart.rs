//! `multipart/form-data` bodies, as k6 sends an object body holding
//! `http.file(...)` values: one part per file (`name`, `filename`, its content
//! type) and per plain field, separated by a random boundary of 60 hex digits
//! (what Go's `mime/multipart`, under k6, draws), built in Rust so a file's
//! bytes go to the request without passing through JavaScript strings.

use rquickjs::{Ctx, Exception, Function, Object, Value};

/// One part of a form: a file (with its file name and content type) or a field.
pub(crate) struct Part {
    /// The form field's name.
    pub(crate) name: String,
    /// For a file: its file name and content type.
    pub(crate) file: Option<(String, String)>,
    /// The part's bytes.
    pub(crate) data: Vec<u8>,
}

/// `"` and `\` escaped in a quoted header value, as Go's `mime/multipart` does.
fn quoted(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A boundary as Go draws it: 30 random bytes in hex.
pub(crate) fn boundary() -> String {
    let mut b = [0u8; 30];
    // Without the OS's random source a fixed boundary still separates the
    // parts (a part holding it verbatim is what the randomness guards against).
    if getrandom::fill(&mut b).is_err() {
        b = *b"pado-multipart-boundary-000000";
    }
    crate::crypto::encode(&b, "hex").unwrap_or_default()
}

/// The body of `parts` with `boundary`.
pub(crate) fn body(parts: &[Part], boundary: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.data.len() + 160).sum::<usize>() + 64);
    for p in parts {
        out.extend_from_slice(b"--");
        out.extend_from_slice(boundary.as_bytes());
        out.extend_from_slice(b"\r\nContent-Disposition: form-data; name=\"");
        out.extend_from_slice(quoted(&p.name).as_bytes());
        out.push(b'"');
        if let Some((filename, ctype)) = &p.file {
            out.extend_from_slice(b"; filename=\"");
            out.extend_from_slice(quoted(filename).as_bytes());
            out.extend_from_slice(b"\"\r\nContent-Type: ");
            out.extend_from_slice(ctype.as_bytes());
        }
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(&p.data);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"--");
    out.extend_from_slice(boundary.as_bytes());
    out.extend_from_slice(b"--\r\n");
    out
}

/// Install `__pado.multipart(parts)` on `p`: `parts` is a list of
/// `[name, value, filename?, contentType?]` (a file when it has a file name);
/// the answer is `[body as ArrayBuffer, boundary]`.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, p: &Object<'js>) -> rquickjs::Result<()> {
    p.set(
        "multipart",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, list: Vec<Vec<Value<'js>>>| -> rquickjs::Result<Vec<Value<'js>>> {
                let mut parts = Vec::with_capacity(list.len());
                for item in &list {
                    let text = |i: usize| -> rquickjs::Result<Option<String>> {
                        match item.get(i) {
                            Some(v) if !v.is_undefined() && !v.is_null() => Ok(Some(
                                String::from_utf8_lossy(&crate::crypto::bytes_of(&ctx, v)?)
                                    .into_owned(),
                            )),
                            _ => Ok(None),
                        }
                    };
                    let Some(name) = text(0)? else {
                        return Err(Exception::throw_message(
                            &ctx,
                            "a multipart field without a name",
                        ));
                    };
                    let data = match item.get(1) {
                        Some(v) => crate::crypto::bytes_of(&ctx, v)?,
                        None => Vec::new(),
                    };
                    let file = match text(2)? {
                        Some(f) => Some((
                            f,
                            text(3)?.unwrap_or_else(|| "application/octet-stream".into()),
                        )),
                        None => None,
                    };
                    parts.push(Part { name, file, data });
                }
                let b = boundary();
                let bytes = body(&parts, &b);
                Ok(vec![
                    crate::lazy_builtins::array_buffer(&ctx, bytes)?.into_value(),
                    rquickjs::String::from_str(ctx.clone(), &b)?.into_value(),
                ])
            },
        )?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_laid_out_as_k6_sends_them() {
        // The layout k6 v1.8.1 sent for a file and a field (captured from its
        // request to a local server), with its boundary replaced by "B".
        let parts = [
            Part {
                name: "file".into(),
                file: Some(("photo.bin".into(), "application/octet-stream".into())),
                data: vec![0, 255, 10, 13],
            },
            Part {
                name: "field".into(),
                file: None,
                data: "파도 value".as_bytes().to_vec(),
            },
        ];
        let mut want = b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"photo.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\x00\xff\n\r\r\n".to_vec();
        want.extend_from_slice(
            "--B\r\nContent-Disposition: form-data; name=\"field\"\r\n\r\n파도 value\r\n--B--\r\n"
                .as_bytes(),
        );
        assert_eq!(body(&parts, "B"), want);
    }

    #[test]
    fn quotes_in_names_are_escaped_and_boundaries_are_60_hex_digits() {
        let parts = [Part {
            name: "a\"b".into(),
            file: Some(("c\\d".into(), "text/plain".into())),
            data: b"x".to_vec(),
        }];
        let text = String::from_utf8(body(&parts, "B")).unwrap();
        assert!(text.contains(r#"name="a\"b"; filename="c\\d""#), "{text}");
        let b = boundary();
        assert_eq!(b.len(), 60);
        assert!(b.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(b, boundary());
    }
}

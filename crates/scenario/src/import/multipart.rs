//! A `multipart/form-data` body (RFC 7578) built from a recording's list of fields,
//! as HAR 1.2 allows a browser to save a form upload (`postData.params`, with
//! `fileName` and `contentType` for file parts) instead of its bytes. The body is
//! laid out as browsers send it, so the server parses the same fields, file names,
//! content types and values that the browser sent.

/// One field of a form upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    /// The field's name.
    pub name: String,
    /// Its value, or a file part's content.
    pub value: String,
    /// The file name of a file part (`filename=` in its Content-Disposition).
    pub file_name: Option<String>,
    /// The content type of a file part (or of a field that says one).
    pub content_type: Option<String>,
}

/// The `boundary` parameter of a `multipart/...` content type, unquoted; `None`
/// when there is none (or it is empty).
pub(crate) fn boundary_of(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (k, v) = param.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("boundary") {
            return None;
        }
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .unwrap_or(v);
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The body of `parts` separated by `boundary`, or by a boundary chosen here (from
/// the parts' content, so importing the same recording twice writes the same file)
/// when none is given or the given one occurs in a value. Returns the boundary used
/// and the body.
pub(crate) fn build(parts: &[Part], boundary: Option<&str>) -> (String, String) {
    let clashes = |b: &str| parts.iter().any(|p| p.value.contains(b));
    let boundary = match boundary {
        Some(b) if !clashes(b) => b.to_string(),
        _ => {
            let mut seed = 0xcbf2_9ce4_8422_2325u64;
            for p in parts {
                for b in p.name.bytes().chain(p.value.bytes()) {
                    seed = (seed ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
            }
            let mut n = 0u64;
            loop {
                let b = format!("----padoFormBoundary{:016x}", seed.wrapping_add(n));
                if !clashes(&b) {
                    break b;
                }
                n += 1;
            }
        }
    };
    let mut out = String::new();
    for p in parts {
        out.push_str("--");
        out.push_str(&boundary);
        out.push_str("\r\nContent-Disposition: form-data; name=\"");
        out.push_str(&quoted(&p.name));
        out.push('"');
        if let Some(f) = &p.file_name {
            out.push_str("; filename=\"");
            out.push_str(&quoted(f));
            out.push('"');
        }
        out.push_str("\r\n");
        match (&p.content_type, &p.file_name) {
            (Some(ct), _) if !ct.is_empty() => {
                out.push_str("Content-Type: ");
                out.push_str(ct);
                out.push_str("\r\n");
            }
            // A file part always says its type; browsers use this one when they
            // do not know better.
            (_, Some(_)) => out.push_str("Content-Type: application/octet-stream\r\n"),
            _ => {}
        }
        out.push_str("\r\n");
        out.push_str(&p.value);
        out.push_str("\r\n");
    }
    out.push_str("--");
    out.push_str(&boundary);
    out.push_str("--\r\n");
    (boundary, out)
}

/// A name inside `"..."` as browsers write it (the HTML standard's form encoding):
/// `"` as `%22`, line breaks as `%0D` and `%0A`.
fn quoted(s: &str) -> String {
    s.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(name: &str, value: &str, file: Option<&str>, ct: Option<&str>) -> Part {
        Part {
            name: name.into(),
            value: value.into(),
            file_name: file.map(Into::into),
            content_type: ct.map(Into::into),
        }
    }

    #[test]
    fn boundaries_are_read_quoted_or_not() {
        assert_eq!(
            boundary_of("multipart/form-data; boundary=----WebKitFormBoundaryX1").as_deref(),
            Some("----WebKitFormBoundaryX1")
        );
        assert_eq!(
            boundary_of("multipart/form-data; charset=utf-8; BOUNDARY=\"a b\"").as_deref(),
            Some("a b")
        );
        assert_eq!(boundary_of("multipart/form-data"), None);
        assert_eq!(boundary_of("multipart/form-data; boundary="), None);
    }

    #[test]
    fn the_body_is_laid_out_as_browsers_send_it() {
        let parts = [
            part("title", "안녕", None, None),
            part("file", "a,b\n1,2\n", Some("표.csv"), Some("text/csv")),
            part("blob", "x", Some("q\"uote.bin"), None),
        ];
        let (b, body) = build(&parts, Some("XyZ"));
        assert_eq!(b, "XyZ");
        assert_eq!(
            body,
            "--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n안녕\r\n\
             --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"표.csv\"\r\n\
             Content-Type: text/csv\r\n\r\na,b\n1,2\n\r\n\
             --XyZ\r\nContent-Disposition: form-data; name=\"blob\"; filename=\"q%22uote.bin\"\r\n\
             Content-Type: application/octet-stream\r\n\r\nx\r\n--XyZ--\r\n"
        );
    }

    #[test]
    fn a_boundary_found_in_a_value_is_replaced() {
        let parts = [part("a", "--XyZ inside", None, None)];
        let (b, body) = build(&parts, Some("XyZ"));
        assert_ne!(b, "XyZ");
        assert!(!parts[0].value.contains(&b));
        assert!(body.starts_with(&format!("--{b}\r\n")), "{body}");
        // Chosen from the content: the same parts, the same boundary.
        assert_eq!(build(&parts, None).0, b);
    }
}

//! What checks and extraction read from a response: status, the kept head and body,
//! and the body parsed as JSON at most once.

use std::cell::OnceCell;

/// A response as the VU kept it.
pub struct ResponseView<'a> {
    /// Status (0 on transport failure).
    pub status: u16,
    /// The final head's raw bytes (empty when not kept).
    pub head: &'a [u8],
    /// The (de-chunked, possibly capped) body (empty when not kept).
    pub body: &'a [u8],
    json: OnceCell<Option<serde_json::Value>>,
}

impl<'a> ResponseView<'a> {
    /// A view over kept bytes.
    pub fn new(status: u16, head: &'a [u8], body: &'a [u8]) -> Self {
        ResponseView {
            status,
            head,
            body,
            json: OnceCell::new(),
        }
    }

    /// The body as JSON, parsed on first use.
    pub fn json(&self) -> Option<&serde_json::Value> {
        self.json
            .get_or_init(|| serde_json::from_slice(self.body).ok())
            .as_ref()
    }

    /// The body's tree when a check has built it already (`None` when none has),
    /// so that later queries use it rather than reading the body again.
    pub fn parsed_json(&self) -> Option<Option<&serde_json::Value>> {
        self.json.get().map(Option::as_ref)
    }

    /// Values of every header named `name` (case-insensitive).
    pub fn headers<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a [u8]> + 's {
        HeaderIter {
            rest: self.head,
            first: true,
        }
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
        .map(|(_, v)| v)
    }

    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers(name).next()
    }
}

/// Iterates `name: value` lines of a raw head (after the status line).
struct HeaderIter<'a> {
    rest: &'a [u8],
    first: bool,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let end = self
                .rest
                .iter()
                .position(|b| *b == b'\n')
                .unwrap_or(self.rest.len());
            let line = &self.rest[..end];
            self.rest = &self.rest[(end + 1).min(self.rest.len())..];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if self.first {
                self.first = false;
                continue; // status line
            }
            if line.is_empty() {
                self.rest = &[];
                return None;
            }
            if let Some(colon) = line.iter().position(|b| *b == b':') {
                let name = &line[..colon];
                let mut v = &line[colon + 1..];
                while let [b' ' | b'\t', r @ ..] = v {
                    v = r;
                }
                while let [r @ .., b' ' | b'\t'] = v {
                    v = r;
                }
                return Some((name, v));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_json() {
        let head = b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/\r\nContent-Type: application/json\r\nset-cookie: b=2\r\n\r\n";
        let r = ResponseView::new(200, head, br#"{"token":"t-1","n":3}"#);
        assert_eq!(r.header("content-type"), Some(&b"application/json"[..]));
        assert_eq!(r.headers("Set-Cookie").count(), 2);
        assert_eq!(r.json().unwrap()["token"], "t-1");
        assert_eq!(r.header("x-nope"), None);
    }
}

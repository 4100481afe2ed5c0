//! The one rule for naming a request step the scenario does not name: `METHOD /path`
//! with template holes shown by name and identifier segments grouped, so requests to
//! one endpoint share a series (`/posts/123` and `/posts/456` are both
//! `GET /posts/{id}`). Scenario files, quick mode (`pado run URL`) and imports (curl,
//! HAR) all name steps here, so the same request gets the same name however it was
//! written.

use crate::template::{parse_template, Expr, Segment};

/// `GET /posts/{id}` from a method and a URL or URL template (absolute, or a path).
/// The query and fragment are left out; percent-escapes are shown as the text they
/// encode when that is printable UTF-8 (Hangul reads better than `%ED%95%9C`).
pub fn default_step_name(method: &str, url: &str) -> String {
    let path = path_of(url);
    let named = match parse_template(path) {
        Ok(t) => {
            let mut named = String::new();
            for seg in t.segments {
                match seg {
                    Segment::Lit(l) => named.push_str(&l),
                    Segment::Expr(e) | Segment::Typed(e, _) => named.push_str(&hole_name(&e)),
                }
            }
            named
        }
        Err(_) => path.to_string(),
    };
    format!("{method} {}", readable(&group_path(&named)))
}

/// The path of a URL or URL template: after `scheme://authority`, before `?` or `#`
/// (`/` when there is none).
fn path_of(url: &str) -> &str {
    let path_and_query = match url.find("://") {
        Some(i) => {
            let rest = &url[i + 3..];
            rest.find(['/', '?', '#']).map_or("", |j| &rest[j..])
        }
        None => url,
    };
    let path = path_and_query.split(['?', '#']).next().unwrap_or("");
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

/// How a hole shows in a step name: its name, never its value.
fn hole_name(e: &Expr) -> String {
    match e {
        Expr::Name(n, Some(c)) => format!("{{{n}.{c}}}"),
        Expr::Name(n, None) => format!("{{{n}}}"),
        Expr::Pick(items) => format!("{{{}}}", items[0].0),
        Expr::Env(n) => format!("{{env.{n}}}"),
        _ => "{value}".to_string(),
    }
}

/// Percent-escapes decoded for reading, when they decode to printable UTF-8.
fn readable(path: &str) -> String {
    match percent_encoding::percent_decode_str(path).decode_utf8() {
        Ok(s) if !s.chars().any(char::is_control) => s.into_owned(),
        _ => path.to_string(),
    }
}

/// Replace path segments that identify one object (numbers, UUIDs, long hex ids) by
/// `{id}`, so that requests to the same endpoint group together: step names,
/// URL statistics, reports. `/posts/123/comments/9f1c2ab34de56f70` becomes
/// `/posts/{id}/comments/{id}`. A query or fragment is dropped; everything else
/// (slashes, other segments) is kept as given.
pub fn group_path(path: &str) -> String {
    let path = path.split(['?', '#']).next().unwrap_or("");
    path.split('/')
        .map(|seg| if is_id_segment(seg) { "{id}" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether a path segment looks like an object identifier rather than a word.
fn is_id_segment(seg: &str) -> bool {
    if seg.is_empty() {
        return false;
    }
    let b = seg.as_bytes();
    if b.iter().all(u8::is_ascii_digit) {
        return true;
    }
    // UUID: 8-4-4-4-12 hex digits.
    if b.len() == 36 {
        let uuid = b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
        if uuid {
            return true;
        }
    }
    // Long hex (object ids, hashes): at least 12 hex digits, at least one a digit so
    // that words made of the letters a-f stay.
    b.len() >= 12 && b.iter().all(u8::is_ascii_hexdigit) && b.iter().any(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_ids() {
        assert_eq!(
            group_path("/posts/123/comments/9f1c2ab34de56f70"),
            "/posts/{id}/comments/{id}"
        );
        assert_eq!(
            group_path("/u/550e8400-e29b-41d4-a716-446655440000/x?q=1"),
            "/u/{id}/x"
        );
        assert_eq!(group_path("/api/v1/posts/"), "/api/v1/posts/");
        assert_eq!(group_path("/"), "/");
        assert_eq!(group_path("/facadefacade/abc"), "/facadefacade/abc");
        assert_eq!(group_path("/o/5f2b1c9e8d7a6b5c4d3e2f1a"), "/o/{id}");
    }

    #[test]
    fn one_name_however_the_request_was_written() {
        // A scenario's path, quick mode's absolute URL, an import's encoded path.
        for url in [
            "/api/posts/123?x=1",
            "http://127.0.0.1:8080/api/posts/456",
            "https://example.com/api/posts/9f1c2ab34de56f70#top",
        ] {
            assert_eq!(
                default_step_name("GET", url),
                "GET /api/posts/{id}",
                "{url}"
            );
        }
        assert_eq!(
            default_step_name("GET", "http://h/검색/%EA%B2%B0%EA%B3%BC?q=1"),
            "GET /검색/결과"
        );
        // Holes by name, never by value.
        assert_eq!(
            default_step_name(
                "POST",
                "/api/posts/{{ hot_posts }}/c/{{ kw.term }}?t={{ token }}"
            ),
            "POST /api/posts/{hot_posts}/c/{kw.term}"
        );
        assert_eq!(
            default_step_name("GET", "/u/{{ uuid() }}"),
            "GET /u/{value}"
        );
        assert_eq!(default_step_name("GET", "{{ next }}"), "GET {next}");
        assert_eq!(default_step_name("GET", "http://h:1"), "GET /");
        assert_eq!(default_step_name("GET", "http://h:1?q=1"), "GET /");
        // An escape that is not printable text stays escaped.
        assert_eq!(default_step_name("GET", "/a%00b"), "GET /a%00b");
    }
}

//! Steps and requests: methods, URLs (relative ones need a target; a template
//! never supplies the host), headers, bodies, checks and think times.

use crate::model::*;

use super::validator::{Validator, METHODS};
use super::{parse_status_class, split_request_line};

impl Validator<'_> {
    pub(super) fn steps(&mut self, p: &str, steps: &[Step], has_target: bool) {
        for (i, st) in steps.iter().enumerate() {
            let sp = format!("{p}[{i}]");
            match (&st.group, &st.steps) {
                (Some(_), Some(inner)) => {
                    if inner.iter().any(|s| s.group.is_some()) {
                        self.err(&format!("{sp}.steps"), "groups cannot be nested", None);
                    }
                    if st.request.is_some() {
                        self.err(
                            &format!("{sp}.request"),
                            "a group holds `steps`, not a request of its own",
                            None,
                        );
                    }
                    if inner.is_empty() {
                        self.err(&format!("{sp}.steps"), "empty group", None);
                    }
                    self.steps(&format!("{sp}.steps"), inner, has_target);
                    continue;
                }
                (Some(_), None) => {
                    self.err(
                        &format!("{sp}.group"),
                        "a group needs `steps`",
                        Some("e.g. `{ group: login, steps: [ ... ] }`"),
                    );
                    continue;
                }
                (None, Some(_)) => {
                    self.err(
                        &format!("{sp}.steps"),
                        "`steps` belong to a `group`",
                        Some("add `group: <name>`"),
                    );
                    continue;
                }
                (None, None) => {}
            }
            self.step_sse(&sp, st);
            if let Some(g) = &st.grpc {
                if st.request.is_some() || st.ws.is_some() {
                    self.err(
                        &format!("{sp}.grpc"),
                        "a step is a `request`, a `ws` session or a `grpc` call, one of them",
                        Some("put them in separate steps"),
                    );
                }
                self.grpc(&format!("{sp}.grpc"), st, g, has_target);
                for (k, e) in &st.extract {
                    self.extract(&format!("{sp}.extract"), k, e);
                }
                for (k, v) in &st.tags {
                    self.tag_template(&format!("{sp}.tags.{k}"), v);
                }
                if let Some(c) = &st.check {
                    self.check(&format!("{sp}.check"), c);
                }
                if let Some(t) = &st.think {
                    self.think(&format!("{sp}.think"), t);
                }
                continue;
            }
            if st.check.as_ref().is_some_and(|c| c.grpc_status.is_some()) {
                self.err(
                    &format!("{sp}.check.grpc_status"),
                    "`grpc_status` checks a `grpc:` call",
                    Some("an HTTP request's status is `status`"),
                );
            }
            if let Some(ws) = &st.ws {
                if st.request.is_some() {
                    self.err(
                        &format!("{sp}.ws"),
                        "a step is a `request` or a `ws` session, not both",
                        Some("put them in two steps"),
                    );
                }
                if st.check.is_some() || !st.extract.is_empty() || !st.tags.is_empty() {
                    self.err(
                        &format!("{sp}.ws"),
                        "a `ws` step checks and extracts with its actions' `expect` and `extract`; `check`, `extract` and `tags` beside it are for requests",
                        None,
                    );
                }
                self.websocket(&format!("{sp}.ws"), ws, has_target);
                if let Some(t) = &st.think {
                    self.think(&format!("{sp}.think"), t);
                }
                continue;
            }
            if st.request.is_none() && st.think.is_none() {
                self.err(
                    &sp,
                    "a step needs a `request`, a `ws` session, a `grpc` call or a `think`",
                    Some("e.g. `{ name: list, request: \"GET /api/posts\" }`"),
                );
            }
            if st.request.is_none() && (!st.extract.is_empty() || !st.tags.is_empty()) {
                self.err(&sp, "`extract` and `tags` need a request", None);
            }
            for (k, e) in &st.extract {
                self.extract(&format!("{sp}.extract"), k, e);
            }
            for (k, v) in &st.tags {
                self.tag_template(&format!("{sp}.tags.{k}"), v);
            }
            if let Some(r) = &st.request {
                self.request(&format!("{sp}.request"), r, has_target);
            } else if st.check.is_some() {
                self.err(&format!("{sp}.check"), "a check needs a request", None);
            }
            if let Some(c) = &st.check {
                self.check(&format!("{sp}.check"), c);
            }
            if let Some(t) = &st.think {
                self.think(&format!("{sp}.think"), t);
            }
        }
    }

    pub(super) fn request(&mut self, p: &str, r: &RequestSpec, has_target: bool) {
        let (method, url) = match r {
            RequestSpec::Line(line) => match split_request_line(line) {
                Ok(x) => x,
                Err(e) => {
                    self.err(
                        p,
                        e,
                        Some("write `\"GET /path\"` or `\"POST https://host/path\"`"),
                    );
                    return;
                }
            },
            RequestSpec::Full(f) => {
                self.full_request(p, f);
                (
                    f.method.clone().unwrap_or_else(|| "GET".into()),
                    f.url.clone(),
                )
            }
        };
        let up = match r {
            RequestSpec::Line(_) => p.to_string(),
            RequestSpec::Full(_) => format!("{p}.url"),
        };
        if !METHODS.contains(&method.to_ascii_uppercase().as_str()) {
            self.err(
                &up,
                format!("unknown method `{method}`"),
                Some(&format!("use one of {}", METHODS.join(", "))),
            );
        }
        self.template(&up, &url);
        self.request_url(&up, &url, has_target);
    }

    /// The fields of a request written as a mapping: one body at most, its headers,
    /// templates and base64 checked.
    fn full_request(&mut self, p: &str, f: &RequestFull) {
        let bodies = [
            f.body.is_some(),
            f.json.is_some(),
            f.form.is_some(),
            f.body_file.is_some(),
            f.body_base64.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if bodies > 1 {
            self.err(
                &format!("{p}.body"),
                "give only one of `body`, `json`, `form`, `body_file`, `body_base64`",
                None,
            );
        }
        for (k, v) in &f.headers {
            self.header(&format!("{p}.headers.{k}"), k, v);
            self.template(&format!("{p}.headers.{k}"), v);
        }
        if let Some(b) = &f.body {
            self.template(&format!("{p}.body"), b);
        }
        if let Some(b) = &f.body_base64 {
            if let Err(e) = crate::decode_body_base64(b) {
                self.err(
                    &format!("{p}.body_base64"),
                    format!("not base64: {e}"),
                    Some("write the bytes in standard base64 (A-Z a-z 0-9 + /, `=` padding)"),
                );
            }
        }
        if let Some(j) = &f.json {
            self.json_templates(&format!("{p}.json"), j);
        }
        if let Some(form) = &f.form {
            for (k, v) in form {
                self.template(&format!("{p}.form.{k}"), v);
            }
        }
        if let Some(t) = f.timeout {
            if t.get().is_zero() {
                self.err(&format!("{p}.timeout"), "must be more than 0", None);
            }
        }
    }

    /// Where a request goes: a path under `target`, an absolute http(s) URL, or a
    /// template whose scheme and host are literal.
    fn request_url(&mut self, up: &str, url: &str, has_target: bool) {
        if url.contains("{{") {
            let head = url.split("{{").next().unwrap_or_default();
            if head.is_empty() {
                // The URL starts with a hole: its value is the path (an extracted
                // `Location`, a link from a response), checked when it is rendered.
                if !has_target {
                    self.err(
                        up,
                        format!("`{url}` is a path from a template but the file has no `target`"),
                        Some("add `target: http://127.0.0.1:8080` at the top: the path is requested there"),
                    );
                }
            } else if !url.starts_with('/') && head.matches('/').count() < 3 {
                self.err(
                    up,
                    "the scheme, host and port of a URL cannot come from a template",
                    Some("put the host in `target` (or `--target`) and template the path and query, or start the URL with the hole (`{{ next }}`) to request a path taken from a response"),
                );
            }
            return;
        }
        if url.is_empty() {
            self.err(up, "empty URL", None);
        } else if url.starts_with('/') {
            if !has_target {
                self.err(
                    up,
                    format!("`{url}` is relative but the file has no `target`"),
                    Some("add `target: http://127.0.0.1:8080` at the top, or use an absolute URL"),
                );
            }
        } else {
            match url::Url::parse(url) {
                Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
                Ok(u) => self.err(
                    up,
                    format!("scheme `{}` is not supported", u.scheme()),
                    Some("use http:// or https://"),
                ),
                Err(e) => self.err(
                    up,
                    format!("`{url}` is not a URL: {e}"),
                    Some("a path starts with `/`; a full URL with http:// or https://"),
                ),
            }
        }
    }

    pub(super) fn header(&mut self, p: &str, k: &str, v: &str) {
        let bad_name = k.is_empty()
            || !k
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if bad_name {
            self.err(p, format!("`{k}` is not a valid header name"), None);
        }
        if v.contains('\r') || v.contains('\n') {
            self.err(p, "a header value cannot contain a line break", None);
        }
        if v.contains('\0') {
            self.err(p, "a header value cannot contain a NUL byte", None);
        }
        if k.eq_ignore_ascii_case("transfer-encoding") {
            self.err(
                p,
                "pado frames request bodies itself (Content-Length); a `Transfer-Encoding` header would make the request unreadable",
                Some("remove the header"),
            );
        }
    }

    pub(super) fn check(&mut self, p: &str, c: &Check) {
        // Values compared with the response may hold templates (`{{ id }}`): the
        // names they use must exist like anywhere else.
        if let Some(t) = c.body_contains.as_deref().filter(|t| t.contains("{{")) {
            self.template(&format!("{p}.body_contains"), t);
        }
        for (path, v) in &c.json {
            if let Some(t) = v.as_str().filter(|t| t.contains("{{")) {
                self.template(&format!("{p}.json.{path}"), t);
            }
        }
        for (name, v) in &c.header {
            if v.contains("{{") {
                self.template(&format!("{p}.header.{name}"), v);
            }
        }
        if let Some(StatusMatch::Class(s)) = &c.status {
            if parse_status_class(s).is_none() {
                self.err(
                    &format!("{p}.status"),
                    format!("`{s}` is not a status or class"),
                    Some("write `200`, `[200, 201]` or `\"2xx\"`"),
                );
            }
        }
        if let Some(StatusMatch::Any(v)) = &c.status {
            if v.is_empty() {
                self.err(&format!("{p}.status"), "empty list of statuses", None);
            }
        }
        for path in c.json.keys().chain(c.json_exists.iter()) {
            if let Err(err) = serde_json_path::JsonPath::parse(path) {
                self.err(
                    &format!("{p}.json"),
                    format!("`{path}` is not a JSONPath: {err}"),
                    None,
                );
            }
        }
        if let Some(r) = &c.body_matches {
            if let Err(err) = regex::Regex::new(r) {
                self.err(
                    &format!("{p}.body_matches"),
                    format!("bad regular expression: {err}"),
                    None,
                );
            }
        }
        if c.status.is_none()
            && c.grpc_status.is_none()
            && c.body_contains.is_none()
            && c.max_duration.is_none()
            && c.json.is_empty()
            && c.json_exists.is_empty()
            && c.header.is_empty()
            && c.body_matches.is_none()
        {
            self.err(
                p,
                "a check with nothing to check",
                Some("use `status`, `body_contains`, `body_matches`, `json`, `json_exists`, `header` or `max_duration`"),
            );
        }
    }

    pub(super) fn think(&mut self, p: &str, t: &Think) {
        if let Think::Dist(ThinkDist::Uniform([a, b])) = t {
            if b < a {
                self.err(
                    p,
                    "uniform bounds are reversed",
                    Some("write `[low, high]`"),
                );
            }
        }
    }
}

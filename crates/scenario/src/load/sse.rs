//! `sse:` beside a request: stop conditions that can be met, and JSONPaths that
//! parse, named by file, line and field like every other scenario error.

use crate::model::{SseSpec, Step};

use super::validator::Validator;

impl Validator<'_> {
    /// A step's `sse:` (at step path `sp`): beside a request only, and its options.
    pub(super) fn step_sse(&mut self, sp: &str, st: &Step) {
        let Some(sse) = &st.sse else { return };
        let p = format!("{sp}.sse");
        if st.grpc.is_some() || st.ws.is_some() {
            self.err(
                &p,
                "`sse` reads an HTTP request's event stream, not a `ws` or `grpc` step's",
                None,
            );
        } else if st.request.is_none() {
            self.err(
                &p,
                "`sse` reads a request's answer: the step needs a `request`",
                None,
            );
        }
        self.sse(&p, sse);
    }

    fn sse(&mut self, p: &str, s: &SseSpec) {
        if s.count == Some(0) {
            self.err(&format!("{p}.count"), "must be at least 1", None);
        }
        if s.max_time.is_some_and(|t| t.get().is_zero()) {
            self.err(&format!("{p}.max_time"), "must be more than 0", None);
        }
        if s.until_event.as_deref().is_some_and(str::is_empty) {
            self.err(&format!("{p}.until_event"), "empty event name", None);
        }
        for (field, path) in [("token_path", &s.token_path), ("usage_path", &s.usage_path)] {
            let Some(path) = path else { continue };
            if !s.llm {
                self.err(
                    &format!("{p}.{field}"),
                    format!("`{field}` is read only for an LLM stream"),
                    Some("add `llm: true`"),
                );
            }
            if let Err(err) = serde_json_path::JsonPath::parse(path) {
                self.err(
                    &format!("{p}.{field}"),
                    format!("`{path}` is not a JSONPath: {err}"),
                    Some("e.g. `$.choices[0].delta.content`"),
                );
            }
        }
    }
}

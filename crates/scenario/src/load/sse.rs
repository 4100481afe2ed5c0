//! `sse:` beside a request: stop conditions that can be met, JSONPaths and
//! regular expressions that parse, checks on events that check something and
//! extractions from one source, named by file, line and field like every other
//! scenario error.

use crate::model::{
    PromptSpread, PromptTokens, SseCheck, SseExtractFull, SseExtractSpec, SsePrompt, SseSpec, Step,
    MAX_PROMPT_TOKENS,
};

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
        if let Some(c) = &s.check {
            self.sse_check(&format!("{p}.check"), c);
        }
        if let Some(pr) = &s.prompt {
            self.sse_prompt(&format!("{p}.prompt"), s.llm, pr);
        }
        for (var, e) in &s.extract {
            self.sse_extract(&format!("{p}.extract.{var}"), e);
        }
    }

    /// A prompt's length: within 1..=[`MAX_PROMPT_TOKENS`], a spread with a finite
    /// mean and stddev, a variable name a template can hold, a text that parses;
    /// only for an LLM stream (its input tokens are an LLM figure).
    fn sse_prompt(&mut self, p: &str, llm: bool, pr: &SsePrompt) {
        if !llm {
            self.err(
                p,
                "`prompt` sizes an LLM's prompt: the stream must be read as an LLM's",
                Some("add `llm: true`"),
            );
        }
        let range = format!("between 1 and {MAX_PROMPT_TOKENS}");
        match &pr.tokens {
            PromptTokens::Fixed(n) if !(1..=MAX_PROMPT_TOKENS).contains(n) => {
                self.err(
                    &format!("{p}.tokens"),
                    format!("must be {range}, got {n}"),
                    None,
                );
            }
            PromptTokens::Fixed(_) => {}
            PromptTokens::Spread(PromptSpread { mean, stddev }) => {
                if !mean.is_finite() || *mean < 1.0 || *mean > MAX_PROMPT_TOKENS as f64 {
                    self.err(
                        &format!("{p}.tokens.mean"),
                        format!("must be {range}, got {mean}"),
                        None,
                    );
                }
                if !stddev.is_finite() || *stddev < 0.0 {
                    self.err(
                        &format!("{p}.tokens.stddev"),
                        format!("must be 0 or more, got {stddev}"),
                        None,
                    );
                }
            }
        }
        let var = pr.var_name();
        let ident = var
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && var.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !ident {
            self.err(
                &format!("{p}.var"),
                format!("`{var}` cannot be a variable's name"),
                Some("letters, digits and `_`, e.g. `prompt`"),
            );
        }
        if let Some(t) = &pr.text {
            self.template(&format!("{p}.text"), t);
        }
    }

    /// A JSONPath at `field`, said when it does not parse.
    fn sse_path(&mut self, field: &str, path: &str) {
        if let Err(err) = serde_json_path::JsonPath::parse(path) {
            self.err(
                field,
                format!("`{path}` is not a JSONPath: {err}"),
                Some("e.g. `$.id` or `$.choices[0].finish_reason`"),
            );
        }
    }

    /// A regular expression at `field`, said when it does not compile.
    fn sse_regex(&mut self, field: &str, r: &str) {
        if let Err(err) = regex::Regex::new(r) {
            self.err(field, format!("bad regular expression: {err}"), None);
        }
    }

    /// Checks on every event: something to check, every pattern valid, no
    /// template (an event is judged as it arrives, against fixed values).
    fn sse_check(&mut self, p: &str, c: &SseCheck) {
        if !c.json_valid
            && c.no_event.is_empty()
            && c.body_contains.is_none()
            && c.body_matches.is_none()
            && c.json.is_empty()
            && c.json_exists.is_empty()
        {
            self.err(
                p,
                "a check on events with nothing to check",
                Some("use `json_valid`, `no_event`, `body_contains`, `body_matches`, `json` or `json_exists`"),
            );
        }
        if c.event.as_deref().is_some_and(str::is_empty) {
            self.err(&format!("{p}.event"), "empty event name", None);
        }
        for (i, n) in c.no_event.iter().enumerate() {
            if n.is_empty() {
                self.err(&format!("{p}.no_event[{i}]"), "empty event name", None);
            }
        }
        for path in c.json.keys().chain(&c.json_exists) {
            self.sse_path(&format!("{p}.json"), path);
        }
        if let Some(r) = &c.body_matches {
            self.sse_regex(&format!("{p}.body_matches"), r);
        }
        let templated = c.body_contains.as_deref().is_some_and(|t| t.contains("{{"))
            || c.json
                .values()
                .any(|v| v.as_str().is_some_and(|t| t.contains("{{")));
        if templated {
            self.err(
                p,
                "a check on events compares with fixed text: templates are not read here",
                Some("check the values a template gives in the step's own `check`"),
            );
        }
    }

    /// An extraction from events: one source, valid.
    fn sse_extract(&mut self, p: &str, e: &SseExtractSpec) {
        match e {
            SseExtractSpec::Path(path) => self.sse_path(p, path),
            SseExtractSpec::Full(SseExtractFull {
                json, regex, event, ..
            }) => {
                match (json, regex) {
                    (Some(path), None) => self.sse_path(&format!("{p}.json"), path),
                    (None, Some(r)) => self.sse_regex(&format!("{p}.regex"), r),
                    _ => self.err(
                        p,
                        "give one of `json` and `regex`",
                        Some("e.g. `{ json: \"$.id\", from: last }`"),
                    ),
                }
                if event.as_deref().is_some_and(str::is_empty) {
                    self.err(&format!("{p}.event"), "empty event name", None);
                }
            }
        }
    }
}

//! Templates checked where they stand: syntax, names (feeds and extracted
//! variables), typed values only in JSON bodies, tags without secrets; and
//! extraction rules.

use crate::model::*;

use super::validator::Validator;

impl Validator<'_> {
    /// Check a template's syntax and that every name it uses exists.
    /// A tag value: a template like any other, except that values from the
    /// environment are refused. Tags are written into every result file and shown
    /// in reports, and environment values are often secrets.
    pub(super) fn tag_template(&mut self, p: &str, text: &str) {
        self.template(p, text);
        if let Ok(t) = crate::template::parse_template(text) {
            for e in t.exprs() {
                if let crate::template::Expr::Env(n) = e {
                    self.err(
                        p,
                        format!("`{{{{ env.{n} }}}}` cannot be used in a tag: tags are written to the results and reports, and values from the environment are kept out of them"),
                        Some("tag with something that is not secret (a class, a region); use env values in URLs, headers or bodies"),
                    );
                }
            }
        }
    }

    pub(super) fn template(&mut self, p: &str, text: &str) {
        self.template_value(p, text, false);
    }

    /// Check a template's syntax and names; `json_value` says it is a whole string
    /// of a JSON body, the one place a typed hole (`"{{ n | int }}"`) may stand.
    pub(super) fn template_value(&mut self, p: &str, text: &str, json_value: bool) {
        match crate::template::parse_template(text) {
            Err(e) => self.err(p, format!("template: {e}"), None),
            Ok(t) => {
                if t.has_typed() && !(json_value && t.whole_typed().is_some()) {
                    self.err(
                        p,
                        "a typed value (`| int`, `| number`, `| bool`, `| json`) must be the whole of a JSON body value",
                        Some(if json_value {
                            "write the hole alone in the string: `count: \"{{ n | int }}\"`"
                        } else {
                            "types apply to `json:` bodies; elsewhere a value is text"
                        }),
                    );
                }
                for e in t.exprs() {
                    match e {
                        crate::template::Expr::Name(n, col) => {
                            let feed = self.names.feeds.iter().any(|f| f == n);
                            let var = self.names.vars.iter().any(|v| v == n);
                            if !feed && !var {
                                let known: Vec<&str> = self
                                    .names
                                    .feeds
                                    .iter()
                                    .chain(self.names.vars.iter())
                                    .map(String::as_str)
                                    .collect();
                                self.err(
                                    p,
                                    format!("`{n}` is neither a data feed nor an extracted variable"),
                                    Some(&if known.is_empty() {
                                        "declare it under `data:` or `extract:` it from an earlier response".to_string()
                                    } else {
                                        format!("known names: {}", known.join(", "))
                                    }),
                                );
                            } else if var && !feed && col.is_some() {
                                self.err(
                                    p,
                                    format!("`{n}` is a variable: it has no columns"),
                                    None,
                                );
                            }
                        }
                        crate::template::Expr::Pick(items) => {
                            for (f, _) in items {
                                if !self.names.feeds.iter().any(|x| x == f) {
                                    self.err(p, format!("pick: `{f}` is not a data feed"), None);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    pub(super) fn json_templates(&mut self, p: &str, v: &serde_json::Value) {
        match v {
            serde_json::Value::String(s) => self.template_value(p, s, true),
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    self.json_templates(&format!("{p}[{i}]"), x);
                }
            }
            serde_json::Value::Object(o) => {
                for (k, x) in o {
                    self.json_templates(&format!("{p}.{k}"), x);
                }
            }
            _ => {}
        }
    }

    pub(super) fn extract(&mut self, p: &str, name: &str, e: &ExtractSpec) {
        let ep = format!("{p}.{name}");
        match e {
            ExtractSpec::Path(path) | ExtractSpec::From(ExtractFrom::Json(path)) => {
                if let Err(err) = serde_json_path::JsonPath::parse(path) {
                    self.err(
                        &ep,
                        format!("`{path}` is not a JSONPath: {err}"),
                        Some("write e.g. `$.token` or `$.items[0].id`; other sources: `{ regex: ... }`, `{ header: Location }`, `{ cookie: SESSION }`"),
                    );
                }
            }
            ExtractSpec::From(ExtractFrom::Regex(r)) => {
                if let Err(err) = regex::Regex::new(r) {
                    self.err(&ep, format!("bad regular expression: {err}"), None);
                }
            }
            ExtractSpec::From(ExtractFrom::Header(h))
            | ExtractSpec::From(ExtractFrom::Cookie(h)) => {
                if h.trim().is_empty() {
                    self.err(&ep, "empty name", None);
                }
            }
        }
    }
}

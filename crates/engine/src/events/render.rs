//! One renderer for every [`pado_scenario::events::Action`]-like text pado runs
//! beside the load: an event's action and undo, an experiment's `apply:`,
//! `restore:` and `ready:`. The experiment knob's value is put in first (when there
//! is one), then `{{ env.X }}` is rendered, each value it reads kept to be masked in
//! what is recorded. Having one place means a command or an HTTP call is resolved
//! the same way whoever asked for it: the same URL joining, method default, JSON
//! body and shell quoting.

use pado_scenario::events::EventHttp;
use pado_scenario::experiment::{fill_value, is_value_hole, value_text};
use pado_scenario::template::{parse_template, render_env_only, Expr, Segment};

use super::http_call::HttpCall;
use super::shell_quote::render_shell_line;
use super::EventError;

/// Renders an action's texts, collecting the environment values they read.
pub struct ActionRenderer<'a> {
    /// The experiment knob's value (`{{ value }}`), none for an event.
    value: Option<f64>,
    /// The environment values read so far, to mask in outputs.
    secrets: &'a mut Vec<Vec<u8>>,
}

impl<'a> ActionRenderer<'a> {
    /// A renderer putting `value` into `{{ value }}` holes (an experiment's
    /// actions; `None` for an event's), its secrets pushed onto `secrets`.
    pub fn new(value: Option<f64>, secrets: &'a mut Vec<Vec<u8>>) -> Self {
        ActionRenderer { value, secrets }
    }

    /// `text` with the value put in (when there is one).
    fn filled(&self, text: &str) -> String {
        match self.value {
            Some(v) if text.contains("{{") => fill_value(text, &value_text(v)),
            _ => text.to_string(),
        }
    }

    /// `text` with the value in and `{{ env.X }}` rendered; the values read are
    /// kept as secrets. An error names `field`.
    pub fn text(&mut self, field: &str, text: &str) -> Result<String, EventError> {
        let text = self.filled(text);
        if !text.contains("{{") {
            return Ok(text);
        }
        let err = |message: String| EventError {
            field: field.into(),
            message,
        };
        let parsed = parse_template(&text).map_err(|e| err(e.to_string()))?;
        for seg in &parsed.segments {
            if let Segment::Expr(Expr::Env(n)) = seg {
                if let Ok(v) = std::env::var(n) {
                    self.secrets.push(v.into_bytes());
                }
            }
        }
        render_env_only(&text).map_err(err)
    }

    /// The argv a `run:` (each argument rendered) or a `shell:` (`sh -c LINE`, each
    /// value quoted for where it sits) runs, with its kind; `None` when neither is
    /// given. `field` is the action's (`events[0]`, `experiment.apply`).
    pub fn argv(
        &mut self,
        field: &str,
        run: Option<&[String]>,
        shell: Option<&str>,
    ) -> Result<Option<(&'static str, Vec<String>)>, EventError> {
        if let Some(argv) = run {
            let argv = argv
                .iter()
                .enumerate()
                .map(|(i, a)| self.text(&format!("{field}.run[{i}]"), a))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Some(("run", argv)));
        }
        if let Some(line) = shell {
            let field = format!("{field}.shell");
            let line = self.filled(line);
            // Rendered once for its secrets and its errors; the line itself is
            // quoted value by value.
            self.text(&field, &line)?;
            let line = render_shell_line(&line).map_err(|message| EventError {
                field: field.clone(),
                message,
            })?;
            return Ok(Some(("shell", vec!["sh".into(), "-c".into(), line])));
        }
        Ok(None)
    }

    /// The call an `http:` makes: the URL joined to `target` when it is a path
    /// (http or https only), headers and body rendered, a `json:` body sent as JSON
    /// (a string that is exactly `{{ value }}` becomes the number), the method
    /// GET, or POST with a body, unless given. `field` is the `http:` mapping's.
    pub fn http(
        &mut self,
        field: &str,
        h: &EventHttp,
        target: Option<&str>,
    ) -> Result<HttpCall, EventError> {
        let url_field = format!("{field}.url");
        let err = |message: String| EventError {
            field: url_field.clone(),
            message,
        };
        let raw = self.text(&url_field, &h.url)?;
        let url = match url::Url::parse(&raw) {
            Ok(u) => u,
            Err(url::ParseError::RelativeUrlWithoutBase) => {
                let base = target.ok_or_else(|| {
                    err(format!(
                        "`{}` is a path and the scenario has no `target`",
                        h.url
                    ))
                })?;
                url::Url::parse(base)
                    .and_then(|b| b.join(&raw))
                    .map_err(|e| err(e.to_string()))?
            }
            Err(e) => return Err(err(format!("`{}`: {e}", h.url))),
        };
        if !matches!(url.scheme(), "http" | "https") {
            return Err(err(format!("scheme `{}` is not supported", url.scheme())));
        }
        let mut headers = Vec::new();
        for (k, v) in &h.headers {
            headers.push((k.clone(), self.text(&format!("{field}.headers.{k}"), v)?));
        }
        let body = match (&h.body, &h.json) {
            (Some(b), _) => self.text(&format!("{field}.body"), b)?.into_bytes(),
            (None, Some(j)) => {
                if !headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                {
                    headers.push(("Content-Type".into(), "application/json".into()));
                }
                let j = match self.value {
                    Some(v) => json_with_value(j, v, &value_text(v)),
                    None => j.clone(),
                };
                serde_json::to_vec(&j).unwrap_or_default()
            }
            (None, None) => Vec::new(),
        };
        let method = h
            .method
            .as_deref()
            .map(str::to_ascii_uppercase)
            .unwrap_or_else(|| if body.is_empty() { "GET" } else { "POST" }.into());
        Ok(HttpCall {
            method,
            url,
            headers,
            body,
        })
    }
}

/// A `json:` body with each string that is exactly `{{ value }}` made the number
/// (`{"pool_size": "{{ value }}"}` sends `{"pool_size": 4}`), and the value filled
/// into other strings.
fn json_with_value(j: &serde_json::Value, v: f64, text: &str) -> serde_json::Value {
    use serde_json::Value;
    match j {
        Value::String(s) if is_value_hole(s) => serde_json::Number::from_f64(v)
            .map(|n| {
                if v.fract() == 0.0 && v.abs() < 1e15 {
                    Value::from(v as i64)
                } else {
                    Value::Number(n)
                }
            })
            .unwrap_or(Value::Null),
        Value::String(s) => Value::String(fill_value(s, text)),
        Value::Array(a) => Value::Array(a.iter().map(|x| json_with_value(x, v, text)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), json_with_value(x, v, text)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_value_hole_becomes_the_number_and_text_holes_the_text() {
        let j = serde_json::json!({"pool_size": "{{ value }}", "note": "n={{value}}", "k": [1, "{{ value }}"]});
        assert_eq!(
            json_with_value(&j, 4.0, "4"),
            serde_json::json!({"pool_size": 4, "note": "n=4", "k": [1, 4]})
        );
        assert_eq!(
            json_with_value(&serde_json::json!("{{ value }}"), 0.5, "0.5"),
            serde_json::json!(0.5)
        );
    }

    #[test]
    fn the_value_goes_in_only_when_there_is_one() {
        let mut secrets = Vec::new();
        let run = vec!["echo".to_string(), "n={{ value }}".to_string()];
        let (kind, argv) = ActionRenderer::new(Some(3.0), &mut secrets)
            .argv("experiment.apply", Some(&run), None)
            .unwrap()
            .unwrap();
        assert_eq!((kind, argv[1].as_str()), ("run", "n=3"));
        // An event has no value: the hole is refused as any non-env template is.
        let e = ActionRenderer::new(None, &mut secrets)
            .argv("events[0]", Some(&run), None)
            .unwrap_err();
        assert_eq!(e.field, "events[0].run[1]");
    }

    #[test]
    fn a_path_needs_a_target_and_a_json_body_is_posted() {
        let mut secrets = Vec::new();
        let h = EventHttp {
            url: "/admin/pool".into(),
            json: Some(serde_json::json!({"size": "{{ value }}"})),
            ..Default::default()
        };
        let e = ActionRenderer::new(Some(4.0), &mut secrets)
            .http("experiment.apply.http", &h, None)
            .unwrap_err();
        assert_eq!(e.field, "experiment.apply.http.url");
        assert!(e.message.contains("no `target`"), "{e}");
        let c = ActionRenderer::new(Some(4.0), &mut secrets)
            .http("experiment.apply.http", &h, Some("http://127.0.0.1:9"))
            .unwrap();
        assert_eq!(c.method, "POST");
        assert_eq!(c.url.as_str(), "http://127.0.0.1:9/admin/pool");
        assert_eq!(c.body, br#"{"size":4}"#);
        let ftp = EventHttp {
            url: "ftp://127.0.0.1/x".into(),
            ..Default::default()
        };
        let e = ActionRenderer::new(None, &mut secrets)
            .http("events[0].http", &ftp, None)
            .unwrap_err();
        assert!(e.message.contains("scheme `ftp`"), "{e}");
    }
}

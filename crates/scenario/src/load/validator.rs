//! The validator's state (the problems found, the names a template may use) and
//! the file-level rules: top-level fields and the `observe:` section.

use crate::error::Diagnostic;
use crate::line_index::LineIndex;
use crate::model::*;

pub(super) struct Validator<'a> {
    pub(super) file: &'a str,
    pub(super) index: &'a LineIndex,
    pub(super) out: Vec<Diagnostic>,
    /// Feeds and extracted variables a template may name.
    pub(super) names: Names,
}

/// What templates may refer to.
#[derive(Default)]
pub(super) struct Names {
    pub(super) feeds: Vec<String>,
    pub(super) vars: Vec<String>,
}

fn collect_extracts(steps: &[Step], out: &mut Vec<String>) {
    for s in steps {
        out.extend(s.extract.keys().cloned());
        if let Some(sse) = &s.sse {
            out.extend(sse.extract.keys().cloned());
            if let Some(p) = &sse.prompt {
                out.push(p.var_name().to_string());
            }
        }
        if let Some(ws) = &s.ws {
            for a in &ws.actions {
                out.extend(a.extract.keys().cloned());
            }
        }
        if let Some(inner) = &s.steps {
            collect_extracts(inner, out);
        }
    }
}

pub(super) fn defined_names(c: &Config) -> Names {
    let mut vars = Vec::new();
    collect_extracts(&c.setup, &mut vars);
    collect_extracts(&c.teardown, &mut vars);
    for (_, s) in &c.scenarios {
        collect_extracts(&s.setup_per_vu, &mut vars);
        collect_extracts(&s.teardown_per_vu, &mut vars);
        collect_extracts(&s.flow, &mut vars);
        for m in &s.mix {
            vars.extend(m.extract.keys().cloned());
            if let Some(f) = &m.flow {
                collect_extracts(f, &mut vars);
            }
        }
    }
    Names {
        feeds: c.data.keys().cloned().collect(),
        vars,
    }
}

pub(super) const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

impl Validator<'_> {
    pub(super) fn err(&mut self, field: &str, message: impl Into<String>, hint: Option<&str>) {
        let pos = self.index.locate(field);
        self.out.push(Diagnostic {
            file: self.file.to_string(),
            line: pos.map(|p| p.0),
            column: pos.map(|p| p.1),
            field: field.to_string(),
            message: message.into(),
            hint: hint.map(str::to_string),
        });
    }

    pub(super) fn config(&mut self, c: &Config) {
        if let Some(t) = &c.target {
            // An environment-derived target is named as written, never by its value.
            let shown = c.target_template.as_deref().unwrap_or(t);
            let t = shown;
            match url::Url::parse(c.target.as_deref().unwrap_or_default()) {
                Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {
                    if u.host_str().is_none() {
                        self.err("target", format!("`{t}` has no host"), None);
                    }
                }
                Ok(u) => self.err(
                    "target",
                    format!("scheme `{}` is not supported", u.scheme()),
                    Some("use an http:// or https:// URL"),
                ),
                Err(e) => self.err(
                    "target",
                    format!("`{t}` is not a URL: {e}"),
                    Some("write e.g. `target: http://127.0.0.1:8080`"),
                ),
            }
        }
        if let Some(d) = c.defaults.timeout {
            if d.get().is_zero() {
                self.err("defaults.timeout", "timeout must be more than 0", None);
            }
        }
        if c.defaults.max_body.is_some_and(|m| m.0 == 0) {
            self.err(
                "defaults.max_body",
                "max_body must be more than 0",
                Some("write e.g. `max_body: 16MiB`"),
            );
        }
        if c.defaults
            .connections
            .is_some_and(|r| r != crate::ConnectionReuse::PerVu)
            && c.defaults
                .http
                .is_some_and(|h| h != crate::HttpVersion::Http1)
        {
            self.err(
                "defaults.connections",
                "with HTTP/2 the VUs of a worker share connections, so a VU has none of its own to renew",
                Some("for a connection per VU use `max_streams: 1`; `connections` applies to `http: \"1.1\"`"),
            );
        }
        if let Some(t) = &c.defaults.tls {
            match (&t.client_cert, &t.client_key) {
                (Some(_), None) => self.err(
                    "defaults.tls.client_cert",
                    "a client certificate needs its key",
                    Some("add `client_key: FILE` (PEM) beside it"),
                ),
                (None, Some(_)) => self.err(
                    "defaults.tls.client_key",
                    "a client key needs its certificate",
                    Some("add `client_cert: FILE` (PEM) beside it"),
                ),
                _ => {}
            }
        }
        for (k, v) in &c.defaults.headers {
            self.header(&format!("defaults.headers.{k}"), k, v);
        }
        if let Some(t) = &c.defaults.think {
            self.think("defaults.think", t);
        }
        for (name, d) in &c.data {
            self.data(&format!("data.{name}"), d);
        }
        self.steps("setup", &c.setup, true);
        self.steps("teardown", &c.teardown, true);
        for (metric, list) in &c.thresholds {
            if list.is_empty() {
                self.err(
                    &format!("thresholds.{metric}"),
                    "no expressions",
                    Some("write e.g. `http_req_duration: [\"p(95) < 200\"]`"),
                );
            }
        }
        if let Some(o) = &c.observe {
            self.observe(o, c.target.is_some());
        }
        self.events(c);
        if let Some(x) = &c.experiment {
            self.experiment(x, c);
        }
        let scenario_elsewhere = c.experiment.as_ref().is_some_and(|x| x.scenario.is_some());
        if c.scenarios.is_empty() && !scenario_elsewhere {
            self.err(
                "scenarios",
                "no scenarios: nothing would run",
                Some("add `scenarios: { main: { executor: constant-vus, vus: 10, duration: 30s, flow: [ { request: \"GET /\" } ] } }`"),
            );
        }
        for (name, s) in &c.scenarios {
            self.scenario(&format!("scenarios.{name}"), s, c.target.is_some());
        }
    }

    pub(super) fn observe(&mut self, o: &Observe, has_target: bool) {
        let interval = o.interval.map(|d| d.get());
        if let Some(i) = interval {
            if i < std::time::Duration::from_millis(100) || i > std::time::Duration::from_secs(3600)
            {
                self.err(
                    "observe.interval",
                    "interval must be between 100ms and 1h",
                    Some("2s suits most runs; Prometheus itself defaults to 15s"),
                );
            }
        }
        if let Some(t) = o.timeout {
            if t.get().is_zero() {
                self.err("observe.timeout", "timeout must be more than 0", None);
            }
        }
        if o.endpoints.is_empty() {
            self.err(
                "observe.endpoints",
                "no endpoints to scrape",
                Some("add e.g. `endpoints: [ http://127.0.0.1:8080/actuator/prometheus ]`"),
            );
        }
        let mut names: Vec<String> = Vec::new();
        for (i, e) in o.endpoints.iter().enumerate() {
            let p = match e {
                ObserveEndpoint::Url(_) => format!("observe.endpoints[{i}]"),
                ObserveEndpoint::Full(_) => format!("observe.endpoints[{i}].url"),
            };
            if e.url().starts_with('/') {
                if !has_target {
                    self.err(
                        &p,
                        format!("`{}` is relative but the file has no `target`", e.url()),
                        Some("write a full URL, or set `target:` (relative endpoints are the target's own, e.g. `/actuator/prometheus`)"),
                    );
                }
            } else {
                match url::Url::parse(e.url()) {
                    Ok(u)
                        if (u.scheme() == "http" || u.scheme() == "https")
                            && u.host_str().is_some() => {}
                    Ok(u) => self.err(
                        &p,
                        format!(
                            "`{}`: only http:// and https:// URLs with a host can be scraped",
                            u
                        ),
                        None,
                    ),
                    Err(err) => self.err(
                        &p,
                        format!("`{}` is not a URL: {err}", e.url()),
                        Some("write e.g. `http://127.0.0.1:9100/metrics`"),
                    ),
                }
            }
            let name = e.name();
            if names.contains(&name) {
                let f = match e {
                    ObserveEndpoint::Full(ObserveEndpointSpec { name: Some(_), .. }) => {
                        format!("observe.endpoints[{i}].name")
                    }
                    _ => p.clone(),
                };
                self.err(
                    &f,
                    format!("two endpoints are named `{name}`"),
                    Some("give each endpoint its own `name:`"),
                );
            }
            names.push(name);
            if let ObserveEndpoint::Full(f) = e {
                for (k, v) in &f.headers {
                    let t = match crate::template::parse_template(v) {
                        Ok(t) => t,
                        Err(err) => {
                            self.err(
                                &format!("observe.endpoints[{i}].headers.{k}"),
                                err.to_string(),
                                None,
                            );
                            continue;
                        }
                    };
                    let only_env = t.segments.iter().all(|s| {
                        matches!(
                            s,
                            crate::template::Segment::Lit(_)
                                | crate::template::Segment::Expr(crate::template::Expr::Env(_))
                        )
                    });
                    if !only_env {
                        self.err(
                            &format!("observe.endpoints[{i}].headers.{k}"),
                            "only `{{ env.NAME }}` templates may be used in observe headers",
                            Some("headers are resolved once at start, e.g. `Bearer {{ env.METRICS_TOKEN }}`"),
                        );
                    }
                }
            }
        }
    }
}

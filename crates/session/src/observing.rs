//! From the scenario's `observe:` section (and `--observe` flags) to a running
//! scrape loop: endpoint names, header templates resolved from the environment
//! (their values are secrets: they go into request bytes only), defaults.

use std::time::Duration;

use pado_observe::{Endpoint, ObserveConfig};
use pado_scenario::template::render_env_only;
use pado_scenario::{Config, ObserveEndpoint};

use crate::SessionError;

/// Default time between scrapes: fine enough to line up with per-second load
/// charts, coarse enough that node_exporter's ~1,000 series stay cheap.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(2);

/// Longest default scrape deadline.
const MAX_DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The scrape configuration of `cfg`, or `None` when nothing is observed.
/// `load_origins` are the `http://host:port` origins the load goes to: an
/// endpoint on one of them (without a name of its own) is the service's, `app`.
pub(crate) fn observe_config(
    cfg: &Config,
    file: &str,
    load_origins: &[String],
) -> Result<Option<ObserveConfig>, SessionError> {
    let Some(o) = &cfg.observe else {
        return Ok(None);
    };
    if o.endpoints.is_empty() {
        return Ok(None);
    }
    let interval = o.interval.map(|d| d.get()).unwrap_or(DEFAULT_INTERVAL);
    let timeout = o
        .timeout
        .map(|d| d.get())
        .unwrap_or_else(|| interval.min(MAX_DEFAULT_TIMEOUT));
    let mut endpoints = Vec::new();
    for (i, e) in o.endpoints.iter().enumerate() {
        let raw = if e.url().starts_with('/') {
            let Some(t) = &cfg.target else {
                return Err(SessionError::invalid(format!(
                    "{file}: observe.endpoints[{i}]: `{}` is relative but there is no target",
                    e.url()
                )));
            };
            format!("{}{}", t.trim_end_matches('/'), e.url())
        } else {
            e.url().to_string()
        };
        let shown = match &cfg.target_template {
            Some(tt) if e.url().starts_with('/') => {
                Some(format!("{}{}", tt.trim_end_matches('/'), e.url()))
            }
            _ => None,
        };
        let url = url::Url::parse(&raw).map_err(|err| {
            SessionError::invalid(format!(
                "{file}: observe.endpoints[{i}]: `{}` is not a URL: {err}",
                e.url()
            ))
        })?;
        let mut headers = Vec::new();
        if let ObserveEndpoint::Full(f) = e {
            for (k, v) in &f.headers {
                let value = render_env_only(v).map_err(|err| {
                    SessionError::invalid(format!(
                        "{file}: observe.endpoints[{i}].headers.{k}: {err}"
                    ))
                })?;
                if value.contains(['\r', '\n']) {
                    return Err(SessionError::invalid(format!(
                        "{file}: observe.endpoints[{i}].headers.{k}: the value has a line break"
                    )));
                }
                headers.push((k.clone(), value));
            }
        }
        endpoints.push(Endpoint {
            name: unique_name(e, &endpoints, load_origins),
            url,
            headers,
            shown,
        });
    }
    Ok(Some(ObserveConfig {
        endpoints,
        interval,
        timeout,
        insecure: cfg.defaults.insecure,
    }))
}

/// The endpoint's name: as given, or guessed (`app` for an origin the load goes
/// to), made unique with a numeric suffix.
fn unique_name(e: &ObserveEndpoint, taken: &[Endpoint], load_origins: &[String]) -> String {
    let mut name = e.name();
    let origin = |s: &str| {
        url::Url::parse(s)
            .ok()
            .map(|u| (u.host_str().map(str::to_string), u.port_or_known_default()))
    };
    if let ObserveEndpoint::Url(u) = e {
        if origin(u).is_some() && load_origins.iter().any(|o| origin(o) == origin(u)) {
            name = "app".into();
        }
    }
    let base = name.clone();
    let mut n = 2;
    while taken.iter().any(|x| x.name == name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    name
}

//! From the scenario's `observe:` section (and `--observe` flags) to a running
//! scrape loop: endpoint names, header templates resolved from the environment
//! (their values are secrets: they go into request bytes only), defaults.

use std::time::Duration;

use pado_observe::{Endpoint, ObserveConfig};
use pado_scenario::template::render_env_only;
use pado_scenario::{Config, ObserveEndpoint};

use crate::exit::Failure;

/// Default time between scrapes: fine enough to line up with per-second load
/// charts, coarse enough that node_exporter's ~1,000 series stay cheap.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(2);

/// Longest default scrape deadline.
const MAX_DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The scrape configuration of `cfg`, or `None` when nothing is observed.
pub fn observe_config(cfg: &Config, file: &str) -> Result<Option<ObserveConfig>, Failure> {
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
                return Err(Failure::invalid(format!(
                    "{file}: observe.endpoints[{i}]: `{}` is relative but there is no target",
                    e.url()
                )));
            };
            format!("{}{}", t.trim_end_matches('/'), e.url())
        } else {
            e.url().to_string()
        };
        let url = url::Url::parse(&raw).map_err(|err| {
            Failure::invalid(format!(
                "{file}: observe.endpoints[{i}]: `{}` is not a URL: {err}",
                e.url()
            ))
        })?;
        let mut headers = Vec::new();
        if let ObserveEndpoint::Full(f) = e {
            for (k, v) in &f.headers {
                let value = render_env_only(v).map_err(|err| {
                    Failure::invalid(format!("{file}: observe.endpoints[{i}].headers.{k}: {err}"))
                })?;
                if value.contains(['\r', '\n']) {
                    return Err(Failure::invalid(format!(
                        "{file}: observe.endpoints[{i}].headers.{k}: the value has a line break"
                    )));
                }
                headers.push((k.clone(), value));
            }
        }
        endpoints.push(Endpoint {
            name: unique_name(e, &endpoints, cfg.target.as_deref()),
            url,
            headers,
        });
    }
    Ok(Some(ObserveConfig {
        endpoints,
        interval,
        timeout,
        insecure: cfg.defaults.insecure,
    }))
}

/// The endpoint's name: as given, or guessed (`app` for the target's own
/// origin), made unique with a numeric suffix.
fn unique_name(e: &ObserveEndpoint, taken: &[Endpoint], target: Option<&str>) -> String {
    let mut name = e.name();
    if let (ObserveEndpoint::Url(u), Some(t)) = (e, target) {
        let origin = |s: &str| {
            url::Url::parse(s)
                .ok()
                .map(|u| (u.host_str().map(str::to_string), u.port_or_known_default()))
        };
        if origin(u).is_some() && origin(u) == origin(t) {
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

//! Warnings the run's totals call for, in words that say what to change: tag values
//! over the cap, bodies cut at `max_body`, TLS handshake failures, connections the
//! server closed under pado.

use pado_base::units::size_exact;

use super::LoadedRun;

/// The run's own warnings (run.json) followed by those its totals call for.
pub(super) fn warnings(run: &LoadedRun) -> Vec<String> {
    let mut warnings = run.meta.warnings.clone();
    tag_cap(run, &mut warnings);
    body_cut(run, &mut warnings);
    let totals = &run.totals;
    let all = totals.overall();
    if let Some(reason) = totals
        .failures
        .iter()
        .filter(|f| f.category == "tls")
        .find_map(|f| f.reason.as_deref())
    {
        let n = all.error_breakdown().get("tls").copied().unwrap_or(0);
        warnings.push(format!(
            "{n} requests failed in the TLS handshake: {reason}. For a test certificate, add `--insecure` (or `defaults: {{ insecure: true }}` in the file)"
        ));
    }
    if all.reconnects > 0 {
        warnings.push(format!(
            "{} requests ({:.1}%) found their kept-alive connection already closed by the server and were sent again on a new connection (not failures; the time shows as connecting): the server closes connections without `Connection: close`",
            all.reconnects,
            all.reconnects as f64 * 100.0 / all.requests.max(1) as f64
        ));
    }
    warnings
}

/// Steps whose tag values overflowed the cap into `~other` (said once per step).
fn tag_cap(run: &LoadedRun, warnings: &mut Vec<String>) {
    for s in run.totals.series.iter().filter(|s| !s.key.tags.is_empty()) {
        if s.key.tags.iter().any(|(_, v)| v == "~other") {
            let w = format!(
                "step `{}` produced more distinct tag values than the cap; the rest are counted under `~other` (tag with something of bounded variety, e.g. a class, not an id)",
                s.key.name
            );
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
}

/// Steps whose responses were longer than `max_body`: checks saw only the start.
fn body_cut(run: &LoadedRun, warnings: &mut Vec<String>) {
    for (name, s) in run.totals.by_name() {
        if s.body_cut > 0 {
            let cap = run
                .meta
                .max_body
                .map_or_else(|| "4 MiB".to_string(), size_exact);
            warnings.push(format!(
                "{} responses of step `{name}` were longer than max_body ({cap}): checks and extraction saw only the first {cap}; raise max_body (`defaults: {{ max_body: 16MiB }}` or `--max-body 16MiB`)",
                s.body_cut
            ));
        }
    }
}

//! Seeing single requests: `--http-debug[=full]` (every exchange to stderr as it
//! happens, like k6's) and `--once` (each scenario's flow run once by one VU, every
//! step shown with its checks and extracted values, exit code from the checks).
//! Both receive the engine's redacted [`Trace`]s; this module only formats them.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use pado_base::units::ms_of_us as ms;
use pado_engine::trace::{BodyShown, Observer, Trace, TRACE_BODY_BYTES};
use pado_metrics::Phases;

use crate::config::RunConfig;
use crate::exit::{self, Failure};
use crate::out::out;

/// How much `--http-debug` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DebugLevel {
    /// Heads, statuses, timings and the first bytes of bodies; credential headers
    /// hidden.
    Headers,
    /// Also credential headers (values from `env` still hidden).
    Full,
}

impl DebugLevel {
    /// From the flag's value (`--http-debug` alone gives `headers`).
    pub(crate) fn from_flag(v: Option<&str>) -> Option<DebugLevel> {
        match v? {
            "full" => Some(DebugLevel::Full),
            _ => Some(DebugLevel::Headers),
        }
    }
}

/// Prints every exchange to stderr. One lock per exchange keeps the lines of
/// concurrent requests together.
pub(crate) struct HttpDebug {
    level: DebugLevel,
}

impl HttpDebug {
    /// A printer at `level`.
    pub(crate) fn new(level: DebugLevel) -> Self {
        HttpDebug { level }
    }
}

fn phases_line(p: &Phases) -> String {
    format!(
        "duration {} (blocked {} · connecting {} · tls {} · sending {} · waiting {} · receiving {})",
        ms(p.duration_us),
        ms(p.blocked_us),
        ms(p.connecting_us),
        ms(p.tls_us),
        ms(p.sending_us),
        ms(p.waiting_us),
        ms(p.receiving_us)
    )
}

fn body_line(out: &mut String, prefix: &str, b: &BodyShown) {
    let note = if b.total > TRACE_BODY_BYTES {
        format!("[first {TRACE_BODY_BYTES} of {} bytes]", b.total)
    } else {
        format!("[{} bytes]", b.total)
    };
    let _ = writeln!(out, "{prefix}{note} {}", b.text);
}

/// A WebSocket session's transcript (the trace's response body: a count line,
/// then `→ sent` / `← received` lines, each cut short and redacted), one line each.
fn ws_lines(out: &mut String, prefix: &str, b: &BodyShown) {
    for line in b.text.split("\\n").filter(|l| !l.is_empty()) {
        let _ = writeln!(out, "{prefix}{line}");
    }
    if b.total > TRACE_BODY_BYTES {
        let _ = writeln!(
            out,
            "{prefix}[first {TRACE_BODY_BYTES} of {} bytes of messages]",
            b.total
        );
    }
}

fn status_text(t: &Trace) -> String {
    match (t.error, &t.reason) {
        (Some(e), Some(why)) => format!("no response: {e} ({why})"),
        (Some(e), None) => format!("no response: {e}"),
        (None, _) => t.status.to_string(),
    }
}

impl HttpDebug {
    fn format(&self, t: &Trace) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "--- {} · {} · vu {} ---------------------------",
            t.scope, t.step, t.vu
        );
        let _ = writeln!(o, "> {} {}", t.method, t.url);
        for (k, v) in &t.request_headers {
            let _ = writeln!(o, "> {k}: {v}");
        }
        if let Some(b) = &t.request_body {
            body_line(&mut o, "> body: ", b);
        }
        let _ = writeln!(o, "< {}", status_text(t));
        for (k, v) in &t.response_headers {
            let _ = writeln!(o, "< {k}: {v}");
        }
        if let Some(b) = &t.response_body {
            if t.method == "WS" {
                ws_lines(&mut o, "< ws: ", b);
            } else {
                body_line(&mut o, "< body: ", b);
            }
        }
        let _ = writeln!(o, "  {}", phases_line(&t.phases));
        o
    }
}

impl Observer for HttpDebug {
    fn full(&self) -> bool {
        self.level == DebugLevel::Full
    }

    fn exchange(&self, t: Trace) {
        let text = self.format(&t);
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
    }
}

/// `--once`: prints each step to stdout and counts what failed.
struct Once {
    debug: Option<HttpDebug>,
    last_scope: Mutex<Option<String>>,
}

impl Observer for Once {
    fn full(&self) -> bool {
        self.debug
            .as_ref()
            .is_some_and(|d| d.level == DebugLevel::Full)
    }

    fn exchange(&self, t: Trace) {
        if let Some(d) = &self.debug {
            d.exchange(t.clone());
        }
        let mut o = String::new();
        {
            let mut last = pado_base::lock(&self.last_scope);
            if last.as_deref() != Some(t.scope.as_str()) {
                let what = match t.scope.as_str() {
                    "setup" | "teardown" if t.vu == 0 => format!("{} (once per test)", t.scope),
                    name => format!("scenario {name}"),
                };
                let _ = writeln!(o, "\n{what}");
                *last = Some(t.scope.clone());
            }
        }
        let mark = if t.failed { "✗" } else { "✓" };
        let _ = writeln!(
            o,
            "  {mark} {} → {}  {}",
            t.step,
            status_text(&t),
            ms(t.phases.duration_us)
        );
        let _ = writeln!(o, "      {} {}", t.method, t.url);
        for (k, v) in &t.request_headers {
            let _ = writeln!(o, "      > {k}: {v}");
        }
        let _ = writeln!(
            o,
            "      timings: connecting {} · tls {} · sending {} · waiting {} · receiving {}",
            ms(t.phases.connecting_us),
            ms(t.phases.tls_us),
            ms(t.phases.sending_us),
            ms(t.phases.waiting_us),
            ms(t.phases.receiving_us)
        );
        for c in &t.checks {
            let name = c
                .name
                .strip_prefix(&format!("{}: ", t.step))
                .unwrap_or(&c.name);
            let _ = writeln!(
                o,
                "      {} check {name}: {}",
                if c.ok { "✓" } else { "✗" },
                c.actual
            );
        }
        for (name, v) in &t.extracted {
            match v {
                Some(v) => {
                    let _ = writeln!(o, "      extracted {name} = {v:?}");
                }
                None => {
                    let _ = writeln!(o, "      extracted {name}: nothing matched");
                }
            }
        }
        if t.method == "WS" {
            if let Some(b) = &t.response_body {
                ws_lines(&mut o, "      ", b);
            }
        } else if t.failed {
            if let Some(b) = &t.response_body {
                body_line(&mut o, "      body: ", b);
            }
        }
        out!("{o}");
    }

    fn script_check(&self, scope: &str, name: &str, ok: bool) {
        let mut o = String::new();
        {
            let mut last = pado_base::lock(&self.last_scope);
            if last.as_deref() != Some(scope) {
                let what = match scope {
                    "setup" | "teardown" => format!("{scope} (once per test)"),
                    name => format!("scenario {name}"),
                };
                let _ = writeln!(o, "\n{what}");
                *last = Some(scope.to_string());
            }
        }
        let _ = writeln!(o, "  {} check {name}", if ok { "✓" } else { "✗" });
        out!("{o}");
    }
}

/// `pado run FILE --once`: run each scenario's flow once and say whether every
/// request and check passed (exit 0) or not (exit 99). Writes no result directory.
pub(crate) fn run_once(cfg: &RunConfig) -> Result<i32, Failure> {
    let pass = pado_session::once::SinglePass::compile(&cfg.scenario)?;
    out!(
        "pado · {} · once (one VU, one iteration of each flow, no think times)\n",
        pass.name()
    );
    let got = pass.run(Arc::new(Once {
        debug: cfg.http_debug.map(HttpDebug::new),
        last_scope: Mutex::new(None),
    }));
    let (n, f, c, cf) = (got.requests, got.failed, got.checks, got.checks_failed);
    out!(
        "\n{} {n} request{}, {f} failed · {c} check{}, {cf} failed\n",
        if got.passed() { "ok:" } else { "FAILED:" },
        if n == 1 { "" } else { "s" },
        if c == 1 { "" } else { "s" },
    );
    Ok(if got.passed() {
        exit::OK
    } else {
        exit::ONCE_FAILED
    })
}

//! A result directory with one of its files replaced by any bytes, read as `pado report` reads it.

use pado_results::ResultDir;

use super::{with_scratch, EVENTS, OBSERVE, RUN_JSON, TIMELINE};

pub(crate) const RESULT_DICT: &[&[u8]] = &[
    b"\"t\":",
    b"\"vus\":",
    b"\"series\":",
    b"\"hist\":",
    b"\"HISTFAAAA",
    b"\"lag_hist\":{\"inf\":1}",
    b"\"generator\":",
    b"\"status\":{\"200\":",
    b"\"errors\":{\"timeout\":",
    b"\"k\":\"scrape\"",
    b"\"k\":\"series\"",
    b"\"k\":\"endpoint\"",
    b"\"v\":[[0,",
    b"\"gone\":[",
    b"\"stages\":",
    b"\"thresholds\":",
    b"\"expr\":\"",
    b"p(99.9)<",
    b"rate<",
    b"\"duration_s\":",
    b"\"version\":",
    b"\"start_s\":",
    b"\"end_s\":",
];

// ---- result directory --------------------------------------------------------------

/// `timeline.jsonl` replaced by the input, beside a valid `run.json` and
/// `observe.jsonl`.
pub fn result_timeline(data: &[u8]) {
    result_dir(RUN_JSON, data, OBSERVE, EVENTS);
}

/// `run.json` replaced by the input.
pub fn result_run(data: &[u8]) {
    result_dir(data, TIMELINE, OBSERVE, EVENTS);
}

/// `events.jsonl` replaced by the input: each event's impact and expectations are
/// judged from it by the report.
pub fn result_events(data: &[u8]) {
    result_dir(RUN_JSON, TIMELINE, OBSERVE, data);
    with_scratch(|dir| {
        let _ = pado_results::events::read_events(dir);
    });
}

/// `observe.jsonl` replaced by the input.
pub fn result_observe(data: &[u8]) {
    result_dir(RUN_JSON, TIMELINE, data, EVENTS);
    with_scratch(|dir| {
        let _ = pado_results::read_observations(dir, &|_| true);
    });
}

/// A result directory with these four files, read as `pado report` reads it:
/// load, summary, summary.json, text, HTML, CSV and JUnit.
fn result_dir(run: &[u8], timeline: &[u8], observe: &[u8], events: &[u8]) {
    with_scratch(|dir| {
        for (name, bytes) in [
            ("run.json", run),
            ("timeline.jsonl", timeline),
            ("observe.jsonl", observe),
            ("events.jsonl", events),
        ] {
            std::fs::write(dir.join(name), bytes).expect("write scratch result file");
        }
        let d = match ResultDir::open(dir) {
            Ok(d) => d,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        };
        let run = match pado_report::load(&d) {
            Ok(r) => r,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        };
        let summary = match pado_report::build(&run) {
            Ok(s) => s,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        };
        let _ = d.write_json(pado_results::result_dir::SUMMARY_FILE, &summary);
        let _ = pado_report::render(&summary, pado_report::TextOptions { color: false });
        let _ = pado_report::html::render_html(&run, &summary);
        let _ = pado_report::csv_export::timeline_csv(&run);
        let _ = pado_report::junit::junit_xml(&summary);
    });
}

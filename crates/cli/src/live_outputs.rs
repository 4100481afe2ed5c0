//! Live outputs' lines at the end of a run (how many seconds each store got, how
//! many requests the raw file holds). Which outputs a run writes to is
//! `pado_session::output_flags`'s; the streaming itself is `pado_outputs`'s.

/// The line for the terminal about the raw output, after the summary.
pub(crate) fn raw_line(r: &pado_metrics::RawOutputMeta) -> String {
    let mut l = format!(
        "  output {} {}: {} requests written, {} dropped",
        r.kind, r.path, r.lines_written, r.lines_dropped
    );
    if let Some(e) = &r.error {
        l.push_str(&format!(" (write error: {e})"));
    }
    l
}

/// One line per output for the terminal, after the summary.
pub(crate) fn lines(reports: &[pado_outputs::OutputReport]) -> Vec<String> {
    reports
        .iter()
        .map(|r| {
            let mut l = format!(
                "  output {} {}: {} seconds sent, {} dropped",
                r.kind, r.url, r.seconds_sent, r.seconds_dropped
            );
            if let Some(e) = &r.last_error {
                l.push_str(&format!(" (last error: {e})"));
            }
            l
        })
        .collect()
}

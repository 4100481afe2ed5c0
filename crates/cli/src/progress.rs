//! Live progress while a run goes: one line a second on a terminal (rewritten in
//! place), a line every 10 s otherwise, nothing with --quiet. It reads the closed
//! seconds the aggregator hands over, so it costs the engine nothing.

use std::io::{IsTerminal, Write};

use pado_metrics::{Phase, SecondRecord, Totals};

/// How progress is shown.
pub(crate) struct Progress {
    mode: Mode,
    total_s: f64,
    last_len: usize,
    stages: Vec<pado_results::StageMark>,
    /// Whether to show the thresholds' state.
    pub has_thresholds: bool,
    /// The open-model VU ceiling the dropped-arrivals alert names (`max_vus`), when
    /// known; otherwise the alert says the most VUs allocated.
    pub vu_ceiling: Option<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Quiet,
    Tty,
    Plain,
}

impl Progress {
    /// Progress for a run planned to take `total_s` seconds.
    pub(crate) fn new(quiet: bool, total_s: f64, stages: Vec<pado_results::StageMark>) -> Self {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Tty
        } else {
            Mode::Plain
        };
        Progress {
            mode,
            total_s,
            last_len: 0,
            stages,
            has_thresholds: false,
            vu_ceiling: None,
        }
    }

    /// One closed second.
    pub(crate) fn second(&mut self, r: &SecondRecord, totals: &Totals, thresholds_failing: usize) {
        let pressure = r
            .generator
            .as_ref()
            .and_then(generator_pressure)
            .map(|why| format!("pado {why}"));
        self.line(
            r,
            totals,
            thresholds_failing,
            pressure.into_iter().collect(),
            None,
        );
    }

    /// One closed second of a test on many generators: `r` their sum, `pressure`
    /// what each generator under pressure says (`generator 2/4 busy 95%`),
    /// `reporting` how many of `of` generators the second holds.
    pub(crate) fn second_of_many(
        &mut self,
        r: &SecondRecord,
        totals: &Totals,
        thresholds_failing: usize,
        pressure: Vec<String>,
        (reporting, of): (usize, usize),
    ) {
        let short = (reporting < of).then(|| format!("  generators {reporting}/{of}"));
        self.line(r, totals, thresholds_failing, pressure, short);
    }

    fn line(
        &mut self,
        r: &SecondRecord,
        totals: &Totals,
        thresholds_failing: usize,
        pressure: Vec<String>,
        short: Option<String>,
    ) {
        if self.mode == Mode::Quiet || (self.mode == Mode::Plain && !(r.t + 1).is_multiple_of(10)) {
            return;
        }
        let all = r.overall();
        let p95 = all.phase(Phase::Duration).quantile_us(0.95) as f64 / 1000.0;
        let tot = totals.overall();
        let err = if tot.requests > 0 {
            tot.failed as f64 * 100.0 / tot.requests as f64
        } else {
            0.0
        };
        let head = format!(
            "[{:>5}s/{:>5.0}s] vus {:>5}  req/s {:>9}  p95 {:>9}ms  failed {:>6.2}%",
            r.t + 1,
            self.total_s,
            r.vus,
            pado_base::units::thousands(all.requests),
            pado_base::units::ms(p95),
            err,
        );
        // The rest, least needed first: on a narrow terminal these go first.
        let mut optional = vec![format!(
            "  requests {}",
            pado_base::units::thousands(tot.requests)
        )];
        let now = r.t as f64 + 0.5;
        if let Some(st) = self
            .stages
            .iter()
            .find(|s| s.start_s <= now && now < s.end_s)
        {
            optional.push(format!("  stage: {}", st.label));
        }
        let mut alerts = Vec::new();
        if thresholds_failing > 0 {
            alerts.push(format!("  thresholds failing: {thresholds_failing}"));
        } else if self.has_thresholds {
            optional.push("  thresholds ok".into());
        }
        if let Some(d) = dropped_now(r, totals, self.vu_ceiling) {
            // Said as it happens: the run is not sending the load it was asked to.
            alerts.push(format!("  !! {d}"));
        }
        if let Some(s) = short {
            // Some generators are not in this second: the figures are not the test's.
            alerts.push(s);
        }
        for why in pressure {
            // Said while it happens, not only in the summary.
            alerts.push(format!("  !! {why}"));
        }
        let mut e = std::io::stderr().lock();
        match self.mode {
            Mode::Tty => {
                let line = fit_line(&head, &optional, &alerts, terminal_width());
                let pad = self.last_len.saturating_sub(line.chars().count());
                let _ = write!(e, "\r{line}{}", " ".repeat(pad));
                self.last_len = line.chars().count();
            }
            _ => {
                let line = format!("{head}{}{}", optional.concat(), alerts.concat());
                let _ = writeln!(e, "{line}");
            }
        }
        let _ = e.flush();
    }

    /// End the progress line.
    pub(crate) fn finish(&mut self) {
        if self.mode == Mode::Tty && self.last_len > 0 {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// The progress line for a terminal `width` columns wide (`None`: unknown, nothing
/// cut): a line longer than the terminal wraps and `\r` then rewrites only its last
/// row. Optional parts go first (from the last), the alerts (`!!`, failing
/// thresholds) stay; what still does not fit is cut with `…`.
fn fit_line(head: &str, optional: &[String], alerts: &[String], width: Option<usize>) -> String {
    let alerts = alerts.concat();
    let Some(width) = width else {
        return format!("{head}{}{alerts}", optional.concat());
    };
    // One column spare: writing the last column makes some terminals wrap.
    let room = width.saturating_sub(1).max(10);
    let mut keep = optional.len();
    let line = loop {
        let line = format!("{head}{}{alerts}", optional[..keep].concat());
        if line.chars().count() <= room || keep == 0 {
            break line;
        }
        keep -= 1;
    };
    if line.chars().count() <= room {
        return line;
    }
    let mut cut: String = line.chars().take(room - 1).collect();
    cut.push('…');
    cut
}

/// Columns of the terminal on stderr (`COLUMNS` when the terminal does not say).
fn terminal_width() -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes a `winsize` into the struct we own; fd 2 is only read.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        return Some(ws.ws_col as usize);
    }
    std::env::var("COLUMNS")
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|w| *w > 0)
}

/// Arrivals dropped this second, with the run's share so far, the pool (its
/// `ceiling` when known) and the knob (`None` when this second dropped nothing).
fn dropped_now(r: &SecondRecord, totals: &Totals, ceiling: Option<u32>) -> Option<String> {
    let now: u64 = r.scenarios.iter().map(|s| s.dropped).sum();
    if now == 0 {
        return None;
    }
    let sc = totals.all_scenarios();
    Some(pado_report::summary::dropped_words(
        sc.dropped,
        sc.iterations + sc.interrupted,
        ceiling.map_or(
            pado_report::summary::VuPool::Allocated(r.vus_max),
            pado_report::summary::VuPool::Max,
        ),
    ))
}

/// Whether pado itself was under pressure this second, in a few words (the
/// self-check's per-second conditions).
pub(crate) fn generator_pressure(g: &pado_metrics::GeneratorSecond) -> Option<String> {
    let s = pado_report::timeline::gen_second(0, g);
    if !s.is_full() {
        None // a partial flush, not a second
    } else if s.busy() {
        Some(format!("busy {:.0}%", s.busy_max.min(1.0) * 100.0))
    } else if s.starved() {
        Some(format!(
            "starved: run-queue wait {:.0}%",
            s.wait_max.unwrap_or(0.0) * 100.0
        ))
    } else if s.late() {
        Some(format!("late: event loop {:.0} ms behind", s.lag_max_ms))
    } else {
        None
    }
}

/// A run's progress line, as the session's watcher of its seconds.
impl pado_session::Watcher for Progress {
    fn begin(&mut self, outline: &pado_session::Outline) {
        self.total_s = outline.planned_s;
        self.stages = outline.stages.clone();
        self.vu_ceiling = outline.vu_ceiling;
        self.has_thresholds = outline.has_thresholds;
    }

    fn second(&mut self, r: &SecondRecord, totals: &Totals, thresholds_failing: usize) {
        Progress::second(self, r, totals, thresholds_failing);
    }

    fn finish(&mut self) {
        Progress::finish(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_fits_the_terminal_and_keeps_the_alerts() {
        let head = "[    3s/   10s] vus    10  req/s       120  p95      1.2ms  failed   0.00%";
        let optional = ["  requests 360".to_string(), "  stage: hold 10 VUs".into()];
        let alerts = ["  !! pado busy 95%".to_string()];
        let full = fit_line(head, &optional, &alerts, None);
        assert!(
            full.ends_with("stage: hold 10 VUs  !! pado busy 95%"),
            "{full}"
        );
        assert_eq!(fit_line(head, &optional, &alerts, Some(500)), full);
        // 120 columns: the stage goes, the alert stays.
        let w120 = fit_line(head, &optional, &alerts, Some(120));
        assert!(w120.chars().count() < 120, "{w120}");
        assert!(w120.ends_with("requests 360  !! pado busy 95%"), "{w120}");
        // 80 columns: only the head and the alert, cut to fit.
        let w80 = fit_line(head, &optional, &alerts, Some(80));
        assert_eq!(w80.chars().count(), 79, "{w80}");
        assert!(w80.ends_with('…') && !w80.contains("requests"), "{w80}");
        // Nothing optional and no alert, but a tiny terminal: still cut.
        let w20 = fit_line(head, &[], &[], Some(20));
        assert_eq!(w20.chars().count(), 19);
    }

    #[test]
    fn pressure_is_named_per_second() {
        let mut g = pado_metrics::GeneratorSecond {
            span_ns: 1_000_000_000,
            busy_max: 0.95,
            ..Default::default()
        };
        assert_eq!(generator_pressure(&g).as_deref(), Some("busy 95%"));
        g.busy_max = 0.2;
        g.wait_max = Some(0.4);
        assert_eq!(
            generator_pressure(&g).as_deref(),
            Some("starved: run-queue wait 40%")
        );
        g.wait_max = Some(0.01);
        assert_eq!(generator_pressure(&g), None);
        g.busy_max = 0.99;
        g.span_ns = 100_000_000;
        assert_eq!(generator_pressure(&g), None, "partial flush");
    }

    #[test]
    fn dropped_arrivals_are_said_as_they_happen() {
        let mut totals = Totals::default();
        let sec = |t: u32, dropped: u64| {
            let mut r = SecondRecord::new(t);
            let mut sc = pado_metrics::ScenarioStats::new("s");
            sc.iterations = 42;
            sc.dropped = dropped;
            r.absorb(pado_metrics::Interval {
                vus: 5,
                vus_max: 5,
                scenarios: vec![sc],
                ..Default::default()
            });
            r
        };
        let quiet = sec(0, 0);
        totals.add_second(&quiet);
        assert_eq!(dropped_now(&quiet, &totals, Some(20)), None);
        let busy = sec(1, 58);
        totals.add_second(&busy);
        // The ceiling (20), not the 5 VUs allocated this second.
        assert_eq!(
            dropped_now(&busy, &totals, Some(20)).as_deref(),
            Some("41% of the planned arrivals (58 of 142) were never sent: the VU pool (max 20) was exhausted; raise --max-vus (or max_vus in the file)")
        );
        assert_eq!(
            dropped_now(&busy, &totals, None).as_deref(),
            Some("41% of the planned arrivals (58 of 142) were never sent: the VU pool (5 allocated at most) was exhausted; raise --max-vus (or max_vus in the file)")
        );
    }
}

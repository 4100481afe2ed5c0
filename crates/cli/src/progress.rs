//! Live progress while a run goes: one line a second on a terminal (rewritten in
//! place), a line every 10 s otherwise, nothing with --quiet. It reads the closed
//! seconds the aggregator hands over, so it costs the engine nothing.

use std::io::{IsTerminal, Write};

use pado_metrics::{Phase, SecondRecord, Totals};

/// How progress is shown.
pub struct Progress {
    mode: Mode,
    total_s: f64,
    last_len: usize,
    stages: Vec<pado_metrics::StageMark>,
    /// Whether to show the thresholds' state.
    pub has_thresholds: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Quiet,
    Tty,
    Plain,
}

impl Progress {
    /// Progress for a run planned to take `total_s` seconds.
    pub fn new(quiet: bool, total_s: f64, stages: Vec<pado_metrics::StageMark>) -> Self {
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
        }
    }

    /// One closed second.
    pub fn second(&mut self, r: &SecondRecord, totals: &Totals, thresholds_failing: usize) {
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
        let mut line = format!(
            "[{:>5}s/{:>5.0}s] vus {:>5}  req/s {:>9}  p95 {:>9}ms  failed {:>6.2}%  requests {}",
            r.t + 1,
            self.total_s,
            r.vus,
            pado_report::text::thousands(all.requests),
            pado_report::text::ms(p95),
            err,
            pado_report::text::thousands(tot.requests),
        );
        let now = r.t as f64 + 0.5;
        if let Some(st) = self
            .stages
            .iter()
            .find(|s| s.start_s <= now && now < s.end_s)
        {
            line.push_str(&format!("  stage: {}", st.label));
        }
        if thresholds_failing > 0 {
            line.push_str(&format!("  thresholds failing: {thresholds_failing}"));
        } else if self.has_thresholds {
            line.push_str("  thresholds ok");
        }
        if let Some(d) = dropped_now(r, totals) {
            // Said as it happens: the run is not sending the load it was asked to.
            line.push_str(&format!("  !! {d}"));
        }
        if let Some(why) = r.generator.as_ref().and_then(generator_pressure) {
            // Said while it happens, not only in the summary.
            line.push_str(&format!("  !! pado {why}"));
        }
        let mut e = std::io::stderr().lock();
        match self.mode {
            Mode::Tty => {
                let pad = self.last_len.saturating_sub(line.chars().count());
                let _ = write!(e, "\r{line}{}", " ".repeat(pad));
                self.last_len = line.chars().count();
            }
            _ => {
                let _ = writeln!(e, "{line}");
            }
        }
        let _ = e.flush();
    }

    /// End the progress line.
    pub fn finish(&mut self) {
        if self.mode == Mode::Tty && self.last_len > 0 {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// Arrivals dropped this second, with the run's share so far, the pool and the
/// knob (`None` when this second dropped nothing).
fn dropped_now(r: &SecondRecord, totals: &Totals) -> Option<String> {
    let now: u64 = r.scenarios.iter().map(|s| s.dropped).sum();
    if now == 0 {
        return None;
    }
    let sc = totals.all_scenarios();
    Some(pado_report::summary::dropped_words(
        sc.dropped,
        sc.iterations + sc.interrupted,
        r.vus_max,
    ))
}

/// Whether pado itself was under pressure this second, in a few words (the
/// self-check's per-second conditions).
fn generator_pressure(g: &pado_metrics::GeneratorSecond) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(dropped_now(&quiet, &totals), None);
        let busy = sec(1, 58);
        totals.add_second(&busy);
        assert_eq!(
            dropped_now(&busy, &totals).as_deref(),
            Some("41% of the planned arrivals (58 of 142) were never sent: the VU pool (max 5) was exhausted; raise --max-vus (or max_vus in the file)")
        );
    }
}

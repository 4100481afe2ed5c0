//! The verdict: a few plain sentences from the computed [`Summary`] (wording only;
//! every figure is computed before).

use pado_base::units::{percent2, thousands, vus};

use super::Summary;

/// A few plain sentences: was the SLA met, at what load, what limited it, what next.
pub(super) fn verdict(s: &Summary) -> Vec<String> {
    let mut out = vec![sla_sentence(s)];
    if s.failed_rate > 0.0 {
        if let Some((k, n)) = s.errors.iter().max_by_key(|(_, n)| **n) {
            out.push(format!(
                "{} of requests failed, most as `{k}` ({n})",
                percent2(s.failed_rate)
            ));
        }
    }
    if s.dropped_iterations > 0 {
        out.push(dropped_sentence(s));
    }
    if let Some(d) = s.drift.as_ref().filter(|d| d.drift.notable) {
        out.push(format!(
            "under steady load ({}, {:.0}–{:.0} s), mean latency drifted {:+.0} ms per hour ({:+.0}% over the period, p = {:.3}): a soak signal; watch memory, pools and GC over time",
            d.period.label,
            d.period.start_s,
            d.period.end_s,
            d.drift.slope_per_hour,
            d.drift.relative_change * 100.0,
            d.drift.p_value
        ));
    }
    if let Some(k) = &s.soak {
        out.extend(soak_sentence(s, k));
    }
    saturation_sentences(s, &mut out);
    out
}

/// What the soak analysis concluded, with the drift it rests on.
fn soak_sentence(s: &Summary, k: &pado_analysis::soak::Soak) -> Option<String> {
    use crate::text::soak::{level, per_hour};
    use pado_analysis::soak::Verdict;
    let steady = pado_base::units::duration(k.steady_s);
    let first = k.findings().next();
    match (k.verdict, first) {
        (Verdict::LeakSuspected | Verdict::PoolDrift, Some(r)) => {
            let why = if k.verdict == Verdict::LeakSuspected {
                "still rising at the end of the period: take heap dumps or allocation profiles minutes apart and compare what grew"
            } else {
                "at the same load: connections taken and not given back (a leak), or each use taking longer"
            };
            let more = k.findings().count() - 1;
            Some(format!(
                "{}: `{}` at {} rose from {} to {} under steady load ({}, {:.0}–{:.0} s), {}, {why}{}",
                k.verdict.words(),
                r.series,
                r.endpoint,
                level(r, r.from),
                level(r, r.to),
                r.period.label,
                r.period.start_s,
                r.period.end_s,
                per_hour(r),
                match more {
                    0 => String::new(),
                    1 => "; 1 more resource drifted too (the soak block)".to_string(),
                    n => format!("; {n} more resources drifted too (the soak block)"),
                }
            ))
        }
        (Verdict::Stable, _) if s.soak_mode.is_some() => {
            let what = k.measured();
            let what = match what.split_last() {
                None => "nothing".to_string(),
                Some((last, [])) => last.to_string(),
                Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            };
            Some(format!(
                "soak: stable: {what} held steady over {steady} of steady load{}",
                if k.observed {
                    ""
                } else {
                    " (the target's memory and pools were not observed)"
                }
            ))
        }
        // Latency drift has its own sentence above.
        _ => None,
    }
}

/// The run's verdict in one sentence, from [`Summary::judged`]: what failed (any
/// judged thing: a threshold, an event's expectation, the soak, the requests rule),
/// or that the SLA was met, or that nothing but the run itself was judged.
fn sla_sentence(s: &Summary) -> String {
    let v = &s.judged;
    let failed: Vec<&pado_analysis::verdict::Judged> = v.failures().collect();
    if !failed.is_empty() {
        let thresholds_only = failed
            .iter()
            .all(|j| j.kind == pado_analysis::verdict::JudgedKind::Threshold);
        let shown: Vec<String> = failed
            .iter()
            .take(3)
            .map(|j| match j.kind {
                pado_analysis::verdict::JudgedKind::Threshold => j.name.clone(),
                _ => format!("{}: {}", j.name, j.detail),
            })
            .collect();
        let more = match failed.len() {
            0..=3 => String::new(),
            n => format!("; and {} more", n - 3),
        };
        let lead = if thresholds_only {
            "SLA not met"
        } else {
            "FAILED"
        };
        return format!("{lead}: {}{more}", shown.join("; "));
    }
    if !s.thresholds.is_empty() {
        let passed = match s.thresholds.len() {
            1 => "the threshold passed".to_string(),
            n => format!("all {n} thresholds passed"),
        };
        return match s.websocket.as_ref().filter(|_| s.websocket_only()) {
            // No HTTP request: the load was sessions, said in their figures.
            Some(ws) => format!(
                "SLA met: {passed} at up to {} and {} WebSocket sessions ({:.0} messages received/s)",
                vus(s.vus_max as f64),
                thousands(ws.sessions),
                ws.msgs_received_per_s
            ),
            None => format!(
                "SLA met: {passed} at up to {} and {:.0} req/s",
                vus(s.vus_max as f64),
                s.rps
            ),
        };
    }
    let judged: Vec<&str> = [
        (!s.events.is_empty()).then_some("the events' expectations"),
        v.items
            .iter()
            .any(|j| j.kind == pado_analysis::verdict::JudgedKind::Soak)
            .then_some("the soak verdict"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let advice = "add an SLA (e.g. `--threshold 'p(95) < 200'`) to judge latency and errors too";
    if judged.is_empty() {
        format!("no thresholds were set: {advice} for a pass/fail verdict")
    } else {
        format!(
            "passed: {} held; no thresholds were set: {advice}",
            judged.join(" and ")
        )
    }
}

/// Where throughput stopped keeping up, what limited it and what to do next.
fn saturation_sentences(s: &Summary, out: &mut Vec<String>) {
    use pado_analysis::saturation::Outcome;
    match &s.saturation {
        Some(sat) if sat.outcome == Outcome::Knee => {
            out.push(format!(
                "throughput stopped keeping up with the load at about {} (best {:.0} req/s){}; {}",
                vus(sat.throughput_knee_load.unwrap_or(sat.highest_load)),
                sat.max_rps,
                if sat.throughput_falls {
                    " and fell beyond it (queueing avalanche)"
                } else {
                    ""
                },
                match sat.latency_knee_load {
                    Some(l) => format!("p95 turned upward at about {}", vus(l)),
                    None => "p95 rose beyond it".into(),
                }
            ));
            if let Some(r) = sat.recovery_s {
                out.push(format!("after the load fell, p95 was back near its low-load value in {r:.0} s"));
            }
            match s.bottlenecks.as_ref().and_then(|b| b.limit.as_ref()) {
                Some(l) => out.push(format!(
                    "the limit at that load: {l} (see the bottleneck table); fix it and compare a new run with `pado compare`"
                )),
                None if s.bottlenecks.is_some() => out.push("no observed component was saturated at that load: the limit is in something not scraped (add node_exporter or the database's exporter to `observe:`)".into()),
                None => out.push("next: find what limits the service at that load (CPU, worker or connection pools, GC; `observe:` the service's metrics and pado names it) and compare a fixed run with `pado compare`".into()),
            }
        }
        Some(sat) => out.push(format!(
            "no saturation reached: throughput kept up with the load up to {} ({:.0} req/s) and latency held; the limit is above this test's load, ramp higher to find it",
            vus(sat.highest_load), sat.max_rps
        )),
        None => {}
    }
    let knee_found = s
        .saturation
        .as_ref()
        .is_some_and(|sat| sat.outcome == Outcome::Knee);
    if let Some(b) = s.bottlenecks.as_ref().filter(|_| !knee_found) {
        if let Some(l) = &b.limit {
            out.push(format!("at peak load, already at its limit: {l}"));
        }
    }
}

/// Dropped iterations in the words users need: what share of the planned arrivals
/// never went out, why, and the knob that fixes it. Without it a run that sent 40%
/// of its load can read as a pass.
pub fn dropped_sentence(s: &Summary) -> String {
    dropped_words(
        s.dropped_iterations,
        s.iterations + s.iterations_interrupted,
        VuPool::of(&s.scenarios, s.vus_max),
    )
}

/// The VU pool an open-model run drops arrivals from, as the sentence names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VuPool {
    /// The configured ceiling (`max_vus`, summed over the open-model scenarios):
    /// the knob's value, which is what the user can raise.
    Max(u32),
    /// Only the most VUs allocated at once is known (files written before the
    /// ceiling was recorded, the live view of many generators): said as such, never
    /// as the ceiling, since a pool split across worker threads can drop arrivals
    /// before every VU of the ceiling was allocated.
    Allocated(u32),
}

impl VuPool {
    /// The pool of these scenarios: the sum of the open-model ones' `max_vus`, or,
    /// when one of them did not record it, the most VUs allocated at once.
    pub fn of(scenarios: &[pado_results::ScenarioMeta], allocated: u32) -> VuPool {
        let open: Vec<_> = scenarios.iter().filter(|s| s.open_model).collect();
        let caps: Option<Vec<u32>> = open.iter().map(|s| s.max_vus).collect();
        match caps {
            Some(c) if !c.is_empty() => {
                VuPool::Max(c.iter().fold(0u32, |a, n| a.saturating_add(*n)))
            }
            _ => VuPool::Allocated(allocated),
        }
    }
}

/// `dropped` of `dropped + started` planned arrivals never sent, from this VU pool
/// (shared by the summary and the live progress line).
pub fn dropped_words(dropped: u64, started: u64, pool: VuPool) -> String {
    let planned = (dropped + started).max(1) as f64;
    let pct = dropped as f64 * 100.0 / planned;
    let share = if pct >= 1.0 {
        format!("{pct:.0}%")
    } else {
        format!("{pct:.1}%")
    };
    let pool = match pool {
        VuPool::Max(n) => format!("max {n}"),
        VuPool::Allocated(n) => format!("{n} allocated at most"),
    };
    format!(
        "{share} of the planned arrivals ({} of {}) were never sent: the VU pool ({pool}) was exhausted; raise --max-vus (or max_vus in the file)",
        thousands(dropped),
        thousands(dropped + started),
    )
}

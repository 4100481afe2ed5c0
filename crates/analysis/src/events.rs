//! Events on the timeline (`events.jsonl`): each event's impact — errors and latency
//! before, during and after its window, time to the first error, time to recovery —
//! and its expectations (`during:` thresholds over the window, `recovers`,
//! `no_errors_after`), judged from the result directory alone so that `pado run`
//! and `pado report` give the same verdict.
//!
//! Seconds of the timeline are placed by their middle: second `t` covers
//! `[t, t+1)` and belongs to a window `[a, b)` when `t + 0.5` does. The timeline is
//! read once ([`EventFold::add_second`]); memory is a few numbers per second plus
//! three histograms and one window's totals per event.

use pado_metrics::{second_in_window, LatencyHistogram, Phase, SecondRecord, Totals};
use pado_results::events::{EventRecord, Outcome};
use pado_scenario::events::{parse_recovers, Recovers, DEFAULT_HOLD};
use serde::{Deserialize, Serialize};

use crate::thresholds::{parse, Threshold};
use crate::TotalsSource;

/// Shortest before/after window, s: a point event or a short fault is compared
/// with at least this much of the run on either side.
pub const MIN_SIDE_WINDOW_S: f64 = 10.0;

/// Errors and latency of one window of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowFigures {
    /// Start, s of the run.
    pub start_s: f64,
    /// End, s of the run.
    pub end_s: f64,
    /// Whole seconds of the timeline in it.
    pub seconds: u32,
    /// Requests completed in it.
    pub requests: u64,
    /// Of them, failed.
    pub failed: u64,
    /// `failed / requests` (0 without requests).
    pub error_rate: f64,
    /// Requests per second.
    pub rps: f64,
    /// Median `http_req_duration`, ms (`None` without requests).
    pub p50_ms: Option<f64>,
    /// 95th percentile, ms.
    pub p95_ms: Option<f64>,
}

/// One expectation of an event and whether it held.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpectationResult {
    /// `during`, `recovers` or `no_errors_after`.
    pub kind: String,
    /// As written (`http_req_failed: rate < 0.05`, `p(95) < 200 within 30s`,
    /// `10s`).
    pub expr: String,
    /// Whether it held.
    pub ok: bool,
    /// The value judged: the window's statistic, the recovery time (s), or the
    /// failed requests counted.
    pub value: Option<f64>,
    /// One sentence saying what was seen.
    pub detail: String,
}

/// What an event did to the run, and whether what was expected of it held.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventImpact {
    /// Name.
    pub name: String,
    /// `run`, `shell`, `http` or `mark`.
    pub kind: String,
    /// Start, s of the run (planned, when it never ran).
    pub start_s: f64,
    /// End of its window, s; `None` for a point event.
    pub end_s: Option<f64>,
    /// `ok`, `failed`, `timeout`, `skipped` (the run ended first), or `mark`.
    pub outcome: String,
    /// Whether a failure stops the run.
    pub required: bool,
    /// Why its action or undo failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The window before it (as long as the fault, at least 10 s, not before the
    /// previous event's end).
    pub before: WindowFigures,
    /// The fault's window; `None` for a point event.
    pub during: Option<WindowFigures>,
    /// The window after it (as long as `before`, until the next event or the end).
    pub after: WindowFigures,
    /// From the start to the first second with a failed request, s; `None` when
    /// nothing failed from the start to the end of `after`.
    pub time_to_first_error_s: Option<f64>,
    /// From the window's end to the first second from which the run is back —
    /// the first `recovers` condition, or else within the `before` window's error
    /// rate (+1 point) and p95 (×1.5, +5 ms) — for the hold period (5 s) in a row; 0
    /// when it never left; `None` when it did not come back before the run ended,
    /// and for a `mark` without `recovers` (a mark does nothing to recover from).
    pub time_to_recovery_s: Option<f64>,
    /// Requests that failed from the event's start until it recovered (or until
    /// the end of `after`); 0 for a `mark` without `recovers`.
    pub failed_requests: u64,
    /// Its expectations, in the order written.
    pub expectations: Vec<ExpectationResult>,
}

impl EventImpact {
    /// Whether it passed: its expectations held and, when required, its action did
    /// not fail.
    pub fn ok(&self) -> bool {
        self.expectations.iter().all(|e| e.ok)
            && !(self.required && matches!(self.outcome.as_str(), "failed" | "timeout"))
    }
}

/// A second as the recovery rules read it.
#[derive(Clone, Copy, Debug, Default)]
struct Sec {
    t: u32,
    requests: u64,
    failed: u64,
    p95_us: u64,
}

#[derive(Default)]
struct Tally {
    seconds: u32,
    requests: u64,
    failed: u64,
    hist: LatencyHistogram,
}

impl Tally {
    fn add(&mut self, rec: &SecondRecord) {
        self.seconds += 1;
        for s in &rec.series {
            self.requests += s.requests;
            self.failed += s.failed;
            self.hist.add(s.phase(Phase::Duration));
        }
    }

    fn figures(&self, start_s: f64, end_s: f64) -> WindowFigures {
        let q = |p: f64| (!self.hist.is_empty()).then(|| self.hist.quantile_us(p) as f64 / 1000.0);
        WindowFigures {
            start_s,
            end_s,
            seconds: self.seconds,
            requests: self.requests,
            failed: self.failed,
            error_rate: pado_base::units::share(self.failed, self.requests),
            rps: pado_base::units::share(self.requests, u64::from(self.seconds)),
            p50_ms: q(0.5),
            p95_ms: q(0.95),
        }
    }
}

/// Per second: whether a condition held (`None`: no data in that second).
type Flags = Vec<(u32, Option<bool>)>;

struct Track {
    rec: EventRecord,
    start_s: f64,
    end_s: f64,
    before: (f64, f64),
    after: (f64, f64),
    t_before: Tally,
    t_during: Tally,
    t_after: Tally,
    during_totals: Totals,
    during: Vec<(String, Result<Threshold, String>)>,
    /// Per second from the window's end: whether the condition held (`None`: no
    /// data in that second).
    recovers: Vec<(String, Result<Recovers, String>, Flags)>,
    hold_s: u32,
    /// Start of the next event after this one's end (infinity when none).
    next_start: f64,
}

/// One pass over a run's seconds judging its events: feed every second with
/// [`EventFold::add_second`], then [`EventFold::finish`].
pub struct EventFold {
    tracks: Vec<Track>,
    secs: Vec<Sec>,
    /// The plan's steps, so an expectation's `scenario`, `method` and `group` tags
    /// select the same requests a run's threshold does.
    steps: pado_metrics::StepCatalog,
}

impl EventFold {
    /// The run's step catalogue (`run.json`'s `steps`), which expectations with a
    /// `scenario`, `method` or `group` tag read; without it those have no data, as
    /// thresholds of a directory written before the catalogue.
    pub fn with_steps(mut self, steps: pado_metrics::StepCatalog) -> EventFold {
        self.steps = steps;
        self
    }

    /// The events of a run (from `events.jsonl`, sorted by planned time).
    pub fn new(records: Vec<EventRecord>) -> EventFold {
        let n = records.len();
        let starts: Vec<f64> = records.iter().map(|r| r.start_s()).collect();
        let ends: Vec<f64> = records.iter().map(|r| r.end_s()).collect();
        let mut tracks = Vec::with_capacity(n);
        for (i, rec) in records.into_iter().enumerate() {
            let (start_s, end_s) = (starts[i], ends[i]);
            let side = (end_s - start_s).max(MIN_SIDE_WINDOW_S);
            // Windows of other events ending before this start bound `before`;
            // events starting after this end bound `after`.
            let prev_end = (0..n)
                .filter(|&j| j != i && ends[j] <= start_s && starts[j] < start_s)
                .map(|j| ends[j])
                .fold(0.0, f64::max);
            let next_start = (0..n)
                .filter(|&j| j != i && starts[j] >= end_s && (starts[j], j) > (start_s, i))
                .map(|j| starts[j])
                .fold(f64::INFINITY, f64::min);
            let before = ((start_s - side).max(prev_end).max(0.0), start_s);
            let after = (end_s, (end_s + side).min(next_start));
            let during = rec
                .expect
                .during
                .iter()
                .flat_map(|(k, v)| {
                    v.iter()
                        .map(move |x| (format!("{k}: {x}"), parse(k, x).map_err(|e| e.to_string())))
                })
                .collect();
            let recovers = rec
                .expect
                .recovers
                .iter()
                .map(|x| {
                    (
                        x.clone(),
                        parse_recovers(x).map_err(|e| e.to_string()),
                        Vec::new(),
                    )
                })
                .collect();
            let hold_s = rec
                .expect
                .hold_s
                .unwrap_or(DEFAULT_HOLD.as_secs_f64())
                .round()
                .max(1.0) as u32;
            tracks.push(Track {
                rec,
                start_s,
                end_s,
                before,
                after,
                t_before: Tally::default(),
                t_during: Tally::default(),
                t_after: Tally::default(),
                during_totals: Totals::default(),
                during,
                recovers,
                hold_s,
                next_start,
            });
        }
        EventFold {
            tracks,
            secs: Vec::new(),
            steps: pado_metrics::StepCatalog::default(),
        }
    }

    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.tracks.is_empty()
    }

    /// Fold one second in (seconds in order of `t`).
    pub fn add_second(&mut self, rec: &SecondRecord) {
        if self.tracks.is_empty() {
            return;
        }
        let mut all = Tally::default();
        all.add(rec);
        self.secs.push(Sec {
            t: rec.t,
            requests: all.requests,
            failed: all.failed,
            p95_us: if all.hist.is_empty() {
                0
            } else {
                all.hist.quantile_us(0.95)
            },
        });
        let mut one: Option<Totals> = None;
        for tr in &mut self.tracks {
            let t = rec.t;
            if second_in_window(t, tr.before.0, tr.before.1) {
                tr.t_before.add(rec);
            }
            if tr.end_s > tr.start_s && second_in_window(t, tr.start_s, tr.end_s) {
                tr.t_during.add(rec);
                if !tr.during.is_empty() {
                    tr.during_totals.add_second(rec);
                }
            }
            if second_in_window(t, tr.after.0, tr.after.1) {
                tr.t_after.add(rec);
            }
            if !tr.recovers.is_empty() && f64::from(t) + 0.5 >= tr.end_s {
                let one = one.get_or_insert_with(|| {
                    let mut x = Totals::default();
                    x.add_second(rec);
                    x
                });
                let src = TotalsSource::new(one, 1.0).with_steps(&self.steps);
                for (_, r, flags) in &mut tr.recovers {
                    if let Ok(r) = r {
                        let c = &r.condition;
                        let v = crate::thresholds::MetricSource::aggregate(
                            &src,
                            &c.metric,
                            &c.tags,
                            &c.aggregation,
                        );
                        flags.push((t, v.map(|v| c.passes(v))));
                    }
                }
            }
        }
    }

    /// The events' impact and verdicts.
    pub fn finish(self) -> Vec<EventImpact> {
        let secs = self.secs;
        let steps = self.steps;
        self.tracks
            .into_iter()
            .map(|tr| judge(tr, &secs, &steps))
            .collect()
    }
}

/// The first second at which the condition holds for `hold` seconds in a row (fewer
/// when the run ends first, but at least one). A second without data does not hold,
/// except at the very end: the seconds after the last one with data (the graceful
/// stop's empty tail) are not part of the run's load.
fn first_lasting(flags: &[(u32, Option<bool>)], hold: u32) -> Option<u32> {
    let last = flags.iter().rposition(|f| f.1.is_some())?;
    let flags = &flags[..=last];
    let mut run_start: Option<usize> = None;
    for (i, &(_, ok)) in flags.iter().enumerate() {
        if ok != Some(true) {
            run_start = None;
            continue;
        }
        let s = *run_start.get_or_insert(i);
        if (i - s + 1) as u32 >= hold {
            return Some(flags[s].0);
        }
    }
    run_start.map(|s| flags[s].0)
}

fn outcome(rec: &EventRecord) -> (String, Option<String>) {
    let worst = [&rec.action, &rec.undo]
        .into_iter()
        .flatten()
        .find(|a| a.outcome != Outcome::Ok);
    match worst {
        Some(a) => {
            let word = match a.outcome {
                Outcome::Failed => "failed",
                Outcome::Timeout => "timeout",
                Outcome::Skipped => "skipped",
                Outcome::Stopped => "stopped",
                Outcome::Ok => "ok",
            };
            let why = a
                .error
                .clone()
                .or_else(|| a.exit_code.map(|c| format!("exit code {c}")))
                .or_else(|| a.status.map(|s| format!("answered {s}")));
            (word.into(), why)
        }
        None if rec.action.is_none() && rec.kind == "control" => ("control".into(), None),
        None if rec.action.is_none() => ("mark".into(), None),
        None => ("ok".into(), None),
    }
}

fn judge(tr: Track, secs: &[Sec], steps: &pado_metrics::StepCatalog) -> EventImpact {
    let last_t = secs.last().map(|s| s.t);
    let run_end = last_t.map_or(0.0, |t| f64::from(t) + 1.0);
    let before = tr.t_before.figures(tr.before.0, tr.before.1);
    let is_window = tr.rec.window_end_ms.is_some();
    let during = is_window.then(|| tr.t_during.figures(tr.start_s, tr.end_s));
    let after = tr
        .t_after
        .figures(tr.after.0, tr.after.1.min(run_end.max(tr.after.0)));

    let mut expectations = during_expectations(&tr, steps);
    let mut recovered_at = recovers_expectations(&tr, &mut expectations);
    // A mark does nothing to the target, and a change of the load (`control`, from
    // a session's handle) is no fault: there is nothing to recover from, so it gets
    // a recovery time only when its own `recovers` asks for one.
    let is_mark = tr.rec.action.is_none() && (tr.rec.kind == "mark" || tr.rec.kind == "control");
    // Default recovery: back to the `before` window's error rate and p95.
    if recovered_at.is_none() && tr.recovers.is_empty() && before.requests > 0 && !is_mark {
        recovered_at = default_recovery(&tr, secs, &before);
    }
    let time_to_recovery_s = recovered_at.map(|a| (a - tr.end_s).max(0.0));

    if let Some(d) = tr.rec.expect.no_errors_after_s {
        expectations.push(no_errors_after(&tr, secs, d));
    }

    let after_end = tr.after.1.min(run_end);
    let ttfe = secs
        .iter()
        .find(|s| s.failed > 0 && second_in_window(s.t, tr.start_s, after_end))
        .map(|s| (f64::from(s.t) - tr.start_s).max(0.0));
    let failed_until = recovered_at.unwrap_or(after_end).max(tr.start_s);
    let failed_requests = if is_mark && tr.recovers.is_empty() {
        0
    } else {
        secs.iter()
            .filter(|s| second_in_window(s.t, tr.start_s, failed_until.max(tr.end_s)))
            .map(|s| s.failed)
            .sum()
    };
    let (outcome, error) = outcome(&tr.rec);
    EventImpact {
        name: tr.rec.name.clone(),
        kind: tr.rec.kind.clone(),
        start_s: tr.start_s,
        end_s: is_window.then_some(tr.end_s),
        outcome,
        required: tr.rec.required,
        error,
        before,
        during,
        after,
        time_to_first_error_s: ttfe,
        time_to_recovery_s,
        failed_requests,
        expectations,
    }
}

/// The verdicts of the event's `during` expectations, each over the window's totals.
fn during_expectations(tr: &Track, steps: &pado_metrics::StepCatalog) -> Vec<ExpectationResult> {
    let mut expectations = Vec::new();
    let window_s = f64::from(tr.t_during.seconds).max(1e-9);
    for (text, th) in &tr.during {
        expectations.push(match th {
            Err(e) => bad("during", text, e),
            Ok(th) => {
                let src = TotalsSource::new(&tr.during_totals, window_s).with_steps(steps);
                let v = crate::thresholds::MetricSource::aggregate(
                    &src,
                    &th.metric,
                    &th.tags,
                    &th.aggregation,
                );
                let ok = v.is_some_and(|v| th.passes(v));
                ExpectationResult {
                    kind: "during".into(),
                    expr: text.clone(),
                    ok,
                    value: v,
                    detail: match v {
                        Some(v) => format!(
                            "{} {} over the window ({} s)",
                            th.aggregation,
                            pado_base::units::plain(v),
                            tr.t_during.seconds
                        ),
                        None => "no data in the window".into(),
                    },
                }
            }
        });
    }
    expectations
}

/// The verdicts of the event's `recovers` expectations; the first one's recovery
/// second is the event's.
fn recovers_expectations(tr: &Track, expectations: &mut Vec<ExpectationResult>) -> Option<f64> {
    let mut recovered_at: Option<f64> = None;
    let mut first_recovers = true;
    for (text, r, flags) in &tr.recovers {
        expectations.push(match r {
            Err(e) => bad("recovers", text, e),
            Ok(r) => {
                let at = first_lasting(flags, tr.hold_s).map(f64::from);
                let rec_s = at.map(|a| (a - tr.end_s).max(0.0));
                if first_recovers {
                    recovered_at = at;
                    first_recovers = false;
                }
                let within = r.within.as_secs_f64();
                let ok = rec_s.is_some_and(|s| s <= within);
                ExpectationResult {
                    kind: "recovers".into(),
                    expr: text.clone(),
                    ok,
                    value: rec_s,
                    detail: match rec_s {
                        Some(s) => format!(
                            "held for {} s in a row from {} s after the window's end (allowed {})",
                            tr.hold_s,
                            pado_base::units::plain(s),
                            pado_base::units::duration(within)
                        ),
                        None => "never held for the hold period before the run ended".into(),
                    },
                }
            }
        });
    }
    recovered_at
}

/// The default recovery (when no `recovers` is written): the first second from the
/// window's end that holds the `before` window's error rate and p95 for
/// [`DEFAULT_HOLD`].
fn default_recovery(tr: &Track, secs: &[Sec], before: &WindowFigures) -> Option<f64> {
    let rate_max = before.error_rate + 0.01;
    let p95_max = before.p95_ms.map_or(f64::INFINITY, |p| p * 1.5 + 5.0) * 1000.0;
    let flags: Vec<(u32, Option<bool>)> = secs
        .iter()
        .filter(|s| f64::from(s.t) + 0.5 >= tr.end_s)
        .map(|s| {
            let rate = s.failed as f64 / s.requests.max(1) as f64;
            let ok = rate <= rate_max && (s.p95_us as f64) <= p95_max;
            (s.t, (s.requests > 0).then_some(ok))
        })
        .collect();
    first_lasting(&flags, DEFAULT_HOLD.as_secs() as u32).map(f64::from)
}

/// The verdict of `no_errors_after: d`: no failed request from `d` after the
/// window's end until the next event starts.
fn no_errors_after(tr: &Track, secs: &[Sec], d: f64) -> ExpectationResult {
    let from = tr.end_s + d;
    let cutoff = tr.next_start;
    let span: Vec<&Sec> = secs
        .iter()
        .filter(|s| second_in_window(s.t, from, cutoff))
        .collect();
    let failed: u64 = span.iter().map(|s| s.failed).sum();
    let text = pado_base::units::duration_compact(std::time::Duration::from_secs_f64(d));
    if span.is_empty() {
        ExpectationResult {
            kind: "no_errors_after".into(),
            expr: text,
            ok: false,
            value: None,
            detail: "the run ended before that time".into(),
        }
    } else {
        ExpectationResult {
            kind: "no_errors_after".into(),
            expr: text,
            ok: failed == 0,
            value: Some(failed as f64),
            detail: format!(
                "{failed} failed requests in the {} s from {} s on",
                span.len(),
                pado_base::units::plain(from)
            ),
        }
    }
}

fn bad(kind: &str, text: &str, e: &str) -> ExpectationResult {
    ExpectationResult {
        kind: kind.into(),
        expr: text.into(),
        ok: false,
        value: None,
        detail: format!("cannot be read: {e}"),
    }
}

#[cfg(test)]
mod tests;

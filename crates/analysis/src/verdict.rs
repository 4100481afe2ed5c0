//! The run's one verdict: every judged thing in one list, and the pass/fail and
//! exit code that follow from it.
//!
//! A run is judged on its thresholds (each with its scope), its events'
//! expectations (and required events' actions), the soak verdict when `--soak` asked
//! for one, the checks policy, and one rule of its own: a run in which every request
//! failed, or none completed, failed. The exit code, the summary's sentences, the
//! HTML badge, the JUnit file (one test case per item) and the history row are all
//! read from this one [`Verdict`], so CI never sees a red job beside green JUnit.

use serde::{Deserialize, Serialize};

use crate::events::EventImpact;
use crate::thresholds::ThresholdResult;

/// Exit code of a run whose verdict passed.
pub const EXIT_PASSED: i32 = 0;
/// Exit code of a run whose verdict failed (k6's code for failed thresholds: "the
/// test ran, and what it judges did not hold").
pub const EXIT_FAILED: i32 = 99;

/// What kind of thing was judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgedKind {
    /// A threshold, over the whole run or its stage or window.
    Threshold,
    /// An event's expectation (`during:`, `recovers`, `no_errors_after`), or a
    /// required event's action.
    Event,
    /// The soak verdict (`--soak`).
    Soak,
    /// The checks policy: checks are counted, and fail the run only through a
    /// threshold on `checks` (as in k6).
    Checks,
    /// The run's own rule: some request completed, and not every one failed.
    Requests,
}

impl JudgedKind {
    /// The word used for the kind in JUnit suite names and sentences.
    pub fn word(self) -> &'static str {
        match self {
            JudgedKind::Threshold => "thresholds",
            JudgedKind::Event => "events",
            JudgedKind::Soak => "soak",
            JudgedKind::Checks => "checks",
            JudgedKind::Requests => "requests",
        }
    }
}

/// One judged thing and whether it held.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// What kind of thing.
    pub kind: JudgedKind,
    /// Its name as people read it: `http_req_duration{stage:2}: p(95) < 200`,
    /// `event deploy: during http_req_failed: rate < 0.05`, `soak`.
    pub name: String,
    /// Whether it held.
    pub ok: bool,
    /// One sentence: what was seen, and for a failure why.
    pub detail: String,
}

/// Everything judged about a run, and the outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Whether every item held.
    pub passed: bool,
    /// The exit code `pado run` and `pado report` give: [`EXIT_PASSED`] or
    /// [`EXIT_FAILED`].
    pub exit_code: i32,
    /// Every judged item, in the order: thresholds, events, soak, checks, requests.
    pub items: Vec<Judged>,
}

impl Default for Verdict {
    /// Nothing judged: passed (a `summary.json` written before the verdict).
    fn default() -> Self {
        Verdict {
            passed: true,
            exit_code: EXIT_PASSED,
            items: Vec::new(),
        }
    }
}

/// The soak as judged: present only when `--soak` asked for the verdict.
#[derive(Clone, Copy, Debug)]
pub struct SoakJudging<'a> {
    /// The analysis; `None` when no period of steady load was long enough.
    pub soak: Option<&'a crate::soak::Soak>,
    /// Whether it passed (stable, or a run still going).
    pub ok: bool,
}

/// The requests of a run, as the requests rule reads them.
#[derive(Clone, Debug, Default)]
pub struct RequestCounts {
    /// Requests completed (HTTP and gRPC) plus WebSocket sessions ended.
    pub completed: u64,
    /// Of them, failed (a status the step does not expect, a transport error, a
    /// failed check).
    pub failed: u64,
    /// The most common failure category and its count.
    pub top_error: Option<(String, u64)>,
}

/// What a run is judged on.
#[derive(Clone, Debug, Default)]
pub struct Judging<'a> {
    /// Threshold results, in the order given.
    pub thresholds: &'a [ThresholdResult],
    /// The events' impacts.
    pub events: &'a [EventImpact],
    /// The soak, when `--soak` asked for its verdict.
    pub soak: Option<SoakJudging<'a>>,
    /// Check passes and fails over every check.
    pub checks: (u64, u64),
    /// The run's requests.
    pub requests: RequestCounts,
    /// Every scenario runs a script's function (a k6 script): a run that sent no
    /// request passes the requests rule, as k6 passes it; one that sent requests is
    /// judged as any other.
    pub scripted: bool,
    /// The run is still going (`pado report` of a directory being written): the
    /// requests rule waits for its end.
    pub in_progress: bool,
}

impl Verdict {
    /// Judges a run.
    pub fn judge(j: &Judging<'_>) -> Verdict {
        let mut items = Vec::new();
        items.extend(j.thresholds.iter().map(threshold_item));
        for e in j.events {
            event_items(e, &mut items);
        }
        if let Some(s) = j.soak {
            items.push(soak_item(s));
        }
        let (passes, fails) = j.checks;
        if passes + fails > 0 {
            items.push(Judged {
                kind: JudgedKind::Checks,
                name: "checks".into(),
                ok: true,
                detail: format!(
                    "{fails} of {} checks failed; a failed check fails the run only through a threshold on `checks` (e.g. `checks: rate > 0.99`), as in k6",
                    passes + fails
                ),
            });
        }
        if !j.in_progress {
            items.push(requests_item(&j.requests, j.scripted));
        }
        let passed = items.iter().all(|i| i.ok);
        Verdict {
            passed,
            exit_code: if passed { EXIT_PASSED } else { EXIT_FAILED },
            items,
        }
    }

    /// The items that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Judged> {
        self.items.iter().filter(|i| !i.ok)
    }

    /// Whether anything other than the checks policy and the requests rule (which
    /// every run has) was judged: a threshold, an event's expectation, the soak.
    pub fn has_criteria(&self) -> bool {
        self.items.iter().any(|i| {
            matches!(
                i.kind,
                JudgedKind::Threshold | JudgedKind::Event | JudgedKind::Soak
            )
        })
    }
}

fn value_words(v: Option<f64>) -> String {
    match v {
        Some(v) => format!("was {}", pado_base::units::plain(v)),
        None => "had no data".into(),
    }
}

fn threshold_item(t: &ThresholdResult) -> Judged {
    let over = match t.window_s {
        Some([a, b]) => format!(" over seconds {a:.0}–{b:.0} of the run"),
        None => String::new(),
    };
    Judged {
        kind: JudgedKind::Threshold,
        name: format!("{}: {}", t.metric, t.expr),
        ok: t.ok,
        detail: format!(
            "{}{over}{}",
            value_words(t.value),
            if t.value.is_none() {
                ": a threshold on nothing proves nothing, so it fails"
            } else {
                ""
            }
        ),
    }
}

fn event_items(e: &EventImpact, out: &mut Vec<Judged>) {
    if e.required && matches!(e.outcome.as_str(), "failed" | "timeout") {
        out.push(Judged {
            kind: JudgedKind::Event,
            name: format!("event {}: required action", e.name),
            ok: false,
            detail: format!(
                "the required event {}{}",
                if e.outcome == "timeout" {
                    "timed out"
                } else {
                    "failed"
                },
                e.error
                    .as_deref()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default()
            ),
        });
    }
    for x in &e.expectations {
        out.push(Judged {
            kind: JudgedKind::Event,
            name: format!("event {}: {} {}", e.name, x.kind, x.expr),
            ok: x.ok,
            detail: x.detail.clone(),
        });
    }
}

fn soak_item(s: SoakJudging<'_>) -> Judged {
    let detail = match s.soak {
        Some(k) if s.ok => format!(
            "stable over {} of steady load",
            pado_base::units::duration(k.steady_s)
        ),
        Some(k) => match k.findings().next() {
            Some(r) => format!(
                "{}: `{}` at {} rose under steady load",
                k.verdict.words(),
                r.series,
                r.endpoint
            ),
            None => k.verdict.words().to_string(),
        },
        None if s.ok => "not judged yet: the run is still going".into(),
        None => "no period of steady load was long enough to judge (at least 30 s after a 5 s warm-up); hold the load longer".into(),
    };
    Judged {
        kind: JudgedKind::Soak,
        name: "soak".into(),
        ok: s.ok,
        detail,
    }
}

fn requests_item(r: &RequestCounts, scripted: bool) -> Judged {
    let name = "requests: some completed, not all failed".to_string();
    if r.completed == 0 && scripted {
        return Judged {
            kind: JudgedKind::Requests,
            name,
            ok: true,
            detail: "the script sent no request (a script may; k6 passes such a run too)".into(),
        };
    }
    if r.completed == 0 {
        return Judged {
            kind: JudgedKind::Requests,
            name,
            ok: false,
            detail: "no request completed: nothing was measured (is the target up, and does the load start before the run ends?)".into(),
        };
    }
    if r.failed >= r.completed {
        let most = r
            .top_error
            .as_ref()
            .map(|(k, n)| format!(", most as `{k}` ({n})"))
            .unwrap_or_default();
        return Judged {
            kind: JudgedKind::Requests,
            name,
            ok: false,
            detail: format!(
                "every request failed ({} of {}){most}; if these answers are what the test expects, say so in the step's check (`check: {{ status: 500 }}` replaces the default expectation of a status below 400)",
                pado_base::units::thousands(r.failed),
                pado_base::units::thousands(r.completed)
            ),
        };
    }
    Judged {
        kind: JudgedKind::Requests,
        name,
        ok: true,
        detail: format!(
            "{} of {} requests succeeded",
            pado_base::units::thousands(r.completed - r.failed),
            pado_base::units::thousands(r.completed)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(completed: u64, failed: u64) -> RequestCounts {
        RequestCounts {
            completed,
            failed,
            top_error: (failed > 0).then(|| ("http_500".to_string(), failed)),
        }
    }

    fn threshold(ok: bool) -> ThresholdResult {
        ThresholdResult {
            expr: "p(95) < 200".into(),
            metric: "http_req_duration{stage:2}".into(),
            ok,
            value: Some(if ok { 150.0 } else { 412.0 }),
            window_s: Some([10.0, 20.0]),
        }
    }

    #[test]
    fn the_requests_rule_fires_only_when_all_failed_or_none_completed() {
        let none = Verdict::judge(&Judging {
            requests: counts(0, 0),
            ..Default::default()
        });
        assert!(!none.passed && none.exit_code == EXIT_FAILED);
        assert!(none.items[0].detail.starts_with("no request completed"));
        let all = Verdict::judge(&Judging {
            requests: counts(40, 40),
            ..Default::default()
        });
        assert!(!all.passed);
        assert!(
            all.items[0]
                .detail
                .contains("every request failed (40 of 40), most as `http_500` (40)"),
            "{:?}",
            all.items
        );
        let one_ok = Verdict::judge(&Judging {
            requests: counts(40, 39),
            ..Default::default()
        });
        assert!(
            one_ok.passed && one_ok.exit_code == EXIT_PASSED,
            "{one_ok:?}"
        );
        // A run still going is not judged on its requests yet.
        let going = Verdict::judge(&Judging {
            requests: counts(0, 0),
            in_progress: true,
            ..Default::default()
        });
        assert!(going.passed && going.items.is_empty());
        // A script may send no request (k6 passes it); one whose requests all
        // failed is judged as any run.
        let script_none = Verdict::judge(&Judging {
            requests: counts(0, 0),
            scripted: true,
            ..Default::default()
        });
        assert!(script_none.passed, "{script_none:?}");
        assert!(script_none.items[0].detail.contains("sent no request"));
        let script_all = Verdict::judge(&Judging {
            requests: counts(5, 5),
            scripted: true,
            ..Default::default()
        });
        assert!(!script_all.passed);
    }

    #[test]
    fn every_judged_thing_is_one_item_and_any_failure_fails_the_run() {
        let pass = [threshold(true)];
        let v = Verdict::judge(&Judging {
            thresholds: &pass,
            checks: (97, 3),
            requests: counts(100, 3),
            ..Default::default()
        });
        assert!(v.passed, "{v:?}");
        let kinds: Vec<_> = v.items.iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            [
                JudgedKind::Threshold,
                JudgedKind::Checks,
                JudgedKind::Requests
            ]
        );
        assert!(v.has_criteria());
        // Failed checks alone do not fail the run (k6's policy), and say so.
        assert!(v.items[1].ok && v.items[1].detail.contains("3 of 100 checks failed"));

        let fail = [threshold(false)];
        let v = Verdict::judge(&Judging {
            thresholds: &fail,
            requests: counts(100, 0),
            ..Default::default()
        });
        assert!(!v.passed && v.exit_code == EXIT_FAILED);
        let f: Vec<_> = v.failures().collect();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].name, "http_req_duration{stage:2}: p(95) < 200");
        assert_eq!(f[0].detail, "was 412 over seconds 10–20 of the run");

        // A soak asked for with no steady period long enough fails, and says why.
        let v = Verdict::judge(&Judging {
            soak: Some(SoakJudging {
                soak: None,
                ok: false,
            }),
            requests: counts(100, 0),
            ..Default::default()
        });
        assert!(!v.passed);
        assert_eq!(v.failures().next().unwrap().kind, JudgedKind::Soak);
        assert!(v.has_criteria());
        let plain = Verdict::judge(&Judging {
            requests: counts(100, 0),
            ..Default::default()
        });
        assert!(plain.passed && !plain.has_criteria());
    }
}

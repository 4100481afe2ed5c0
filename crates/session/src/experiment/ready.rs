//! Waiting for `ready:`: an HTTP check, a command's exit code, or a metric of the
//! target's `/metrics` that has settled, checked every `every` until it holds or the
//! timeout passes. A wait that never holds says what was waited for and what was
//! last seen, so the user can tell a slow rollout from a wrong check.

use std::time::{Duration, Instant};

use pado_engine::redact::Redactor;
use pado_scenario::experiment::{
    fill_value, value_text, Ready, ReadyMetric, DEFAULT_READY_EVERY, DEFAULT_READY_TIMEOUT,
};

use super::action::{self, ActionOutcome};

/// Deadline of one check (a check that takes longer is a failed check).
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a metric must stay settled when `for` is not given.
const DEFAULT_SETTLE: Duration = Duration::from_secs(5);
/// Spread allowed around a settled metric's mean, %, when `within_pct` is not given.
const DEFAULT_WITHIN_PCT: f64 = 5.0;

/// Why a point's `ready:` did not hold.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("not ready after {waited}: waited for {what}; last seen: {last}")]
pub struct NotReady {
    /// How long was waited.
    pub waited: String,
    /// What was waited for, in words.
    pub what: String,
    /// The last check's result.
    pub last: String,
}

/// Waits until `r` holds with the knob at `value`; `stopped` ends the wait early
/// (Ctrl-C) as a failure saying so.
pub fn wait(
    r: &Ready,
    value: f64,
    target: Option<&str>,
    stopped: &dyn Fn() -> bool,
) -> Result<(), NotReady> {
    let timeout = r.timeout.map_or(DEFAULT_READY_TIMEOUT, |d| d.get());
    let every = r.every.map_or(DEFAULT_READY_EVERY, |d| d.get());
    let start = Instant::now();
    let mut check = Check::new(r, value, target);
    loop {
        let last = match check.once() {
            Ok(true) => return Ok(()),
            Ok(false) => check.last.clone(),
            Err(e) => e,
        };
        let over = start.elapsed() + every > timeout;
        if over || stopped() {
            return Err(NotReady {
                waited: pado_base::units::duration(start.elapsed().as_secs_f64()),
                what: check.what.clone(),
                last: if stopped() {
                    format!("{last} (stopped)")
                } else {
                    last
                },
            });
        }
        std::thread::sleep(every);
    }
}

/// One kind of check and what it has seen.
struct Check<'a> {
    r: &'a Ready,
    value: f64,
    target: Option<&'a str>,
    what: String,
    last: String,
    /// A metric's readings, with when each was taken.
    seen: Vec<(Instant, f64)>,
}

impl<'a> Check<'a> {
    fn new(r: &'a Ready, value: f64, target: Option<&'a str>) -> Check<'a> {
        let text = value_text(value);
        let what = if let Some(h) = &r.http {
            let status = h.status.unwrap_or(200);
            match &h.body_contains {
                Some(b) => format!(
                    "{} to answer {status} with `{}` in its body",
                    fill_value(&h.url, &text),
                    fill_value(b, &text)
                ),
                None => format!("{} to answer {status}", fill_value(&h.url, &text)),
            }
        } else if let Some(m) = &r.metric {
            let mut w = format!(
                "`{}` at {} to stay within {}% for {}",
                m.name,
                m.url,
                m.within_pct.unwrap_or(DEFAULT_WITHIN_PCT),
                pado_base::units::duration(
                    m.hold.map_or(DEFAULT_SETTLE, |d| d.get()).as_secs_f64()
                )
            );
            if let Some(e) = &m.equals {
                w.push_str(&format!(" at {}", fill_value(e, &text)));
            }
            w
        } else if let Some(run) = &r.run {
            format!("`{}` to exit 0", fill_value(&run.join(" "), &text))
        } else if let Some(s) = &r.shell {
            format!("`{}` to exit 0", fill_value(s, &text))
        } else {
            "nothing".into()
        };
        Check {
            r,
            value,
            target,
            what,
            last: "no check yet".into(),
            seen: Vec::new(),
        }
    }

    /// One check: whether it holds now; `Err` for a check that could not be made.
    fn once(&mut self) -> Result<bool, String> {
        let mut secrets = Vec::new();
        if let Some(h) = &self.r.http {
            let http = pado_scenario::events::EventHttp {
                url: h.url.clone(),
                ..Default::default()
            };
            let call = action::http_call(&http, self.value, self.target, &mut secrets)?;
            let o = action::send(
                &call,
                CHECK_TIMEOUT,
                h.status.or(Some(200)),
                &Redactor::new(secrets),
            );
            let body_ok = h
                .body_contains
                .as_ref()
                .is_none_or(|b| o.output.contains(&fill_value(b, &value_text(self.value))));
            self.last = format!("{}, body `{}`", o.result, short(&o.output));
            return Ok(o.ok && body_ok);
        }
        if let Some(m) = &self.r.metric {
            return self.metric(m);
        }
        let argv = action::argv(
            self.r.run.as_deref(),
            self.r.shell.as_deref(),
            self.value,
            &mut secrets,
        )?
        .ok_or("nothing to check")?;
        let o: ActionOutcome = action::command(&argv, CHECK_TIMEOUT, &Redactor::new(secrets));
        self.last = if o.output.trim().is_empty() {
            o.result.clone()
        } else {
            format!("{}, output `{}`", o.result, short(&o.output))
        };
        Ok(o.ok)
    }

    /// A metric's reading now, then whether every reading of the last `for` lies
    /// within `within_pct` of their mean (and at `equals`, when given).
    fn metric(&mut self, m: &ReadyMetric) -> Result<bool, String> {
        let mut secrets = Vec::new();
        let http = pado_scenario::events::EventHttp {
            url: m.url.clone(),
            ..Default::default()
        };
        let call = action::http_call(&http, self.value, self.target, &mut secrets)?;
        let r = call.send(CHECK_TIMEOUT);
        if let Some(e) = r.error {
            self.last = format!("no answer from {} ({e})", call.url);
            return Ok(false);
        }
        let expo = pado_observe::exposition::parse(&String::from_utf8_lossy(&r.body));
        let Some(v) = find_series(&expo.samples, &m.name) else {
            self.last = format!("no series `{}` in the answer (status {})", m.name, r.status);
            return Ok(false);
        };
        self.last = format!("{v}");
        let now = Instant::now();
        let hold = m.hold.map_or(DEFAULT_SETTLE, |d| d.get());
        self.seen.push((now, v));
        // Keep what the window needs, plus the reading just before it.
        while self.seen.len() > 2 && now.duration_since(self.seen[1].0) >= hold {
            self.seen.remove(0);
        }
        if let Some(e) = &m.equals {
            let want: f64 = fill_value(e, &value_text(self.value))
                .trim()
                .parse()
                .map_err(|_| format!("`equals: {e}` is not a number"))?;
            if (v - want).abs() > want.abs() * 1e-9 {
                self.seen.clear();
                self.last = format!("{v} (waiting for {want})");
                return Ok(false);
            }
        }
        let Some(first) = self.seen.first() else {
            return Ok(false);
        };
        if now.duration_since(first.0) < hold {
            return Ok(false);
        }
        Ok(settled(
            &self.seen.iter().map(|s| s.1).collect::<Vec<_>>(),
            m.within_pct.unwrap_or(DEFAULT_WITHIN_PCT),
        ))
    }
}

/// The value of the series `name` (`family` or `family{label="v",...}`): the sum of
/// the family's matching samples.
fn find_series(samples: &[pado_metrics::ScrapedSample], name: &str) -> Option<f64> {
    let (family, want) = match name.split_once('{') {
        Some((f, rest)) => (f.trim(), parse_labels(rest.trim_end_matches('}'))),
        None => (name.trim(), Vec::new()),
    };
    let mut sum = None;
    for s in samples.iter().filter(|s| s.name == family) {
        if want
            .iter()
            .all(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v))
        {
            *sum.get_or_insert(0.0) += s.value;
        }
    }
    sum
}

fn parse_labels(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        })
        .collect()
}

/// Whether every reading lies within `pct` % of their mean.
fn settled(readings: &[f64], pct: f64) -> bool {
    if readings.is_empty() {
        return false;
    }
    let mean = readings.iter().sum::<f64>() / readings.len() as f64;
    let allowed = mean.abs() * pct / 100.0;
    readings.iter().all(|v| (v - mean).abs() <= allowed)
}

fn short(s: &str) -> String {
    let s = s.trim();
    pado_base::text::cell(s, 120).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_is_found_by_its_labels_and_summed_over_the_rest() {
        let e = pado_observe::exposition::parse(
            "pool{db=\"a\",k=\"1\"} 2\npool{db=\"a\",k=\"2\"} 3\npool{db=\"b\"} 10\nother 1\n",
        );
        assert_eq!(find_series(&e.samples, "pool{db=\"a\"}"), Some(5.0));
        assert_eq!(find_series(&e.samples, "pool"), Some(15.0));
        assert_eq!(find_series(&e.samples, "pool{db=\"c\"}"), None);
        assert_eq!(find_series(&e.samples, "missing"), None);
    }

    #[test]
    fn settled_means_every_reading_within_the_spread() {
        assert!(settled(&[100.0, 103.0, 98.0], 5.0));
        assert!(!settled(&[100.0, 120.0, 98.0], 5.0));
        assert!(!settled(&[], 5.0));
    }

    #[test]
    fn a_check_that_never_holds_says_what_it_waited_for_and_last_saw() {
        let r = Ready {
            shell: Some("echo pool={{ value }}; exit 1".into()),
            timeout: Some(pado_scenario::Dur(Duration::from_millis(300))),
            every: Some(pado_scenario::Dur(Duration::from_millis(100))),
            ..Default::default()
        };
        let t = Instant::now();
        let e = wait(&r, 4.0, None, &|| false).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(3));
        let msg = e.to_string();
        assert!(msg.contains("`echo pool=4; exit 1` to exit 0"), "{msg}");
        assert!(msg.contains("exit 1, output `pool=4`"), "{msg}");
        let ok = Ready {
            run: Some(vec![
                "test".into(),
                "{{ value }}".into(),
                "-eq".into(),
                "4".into(),
            ]),
            ..Default::default()
        };
        assert!(wait(&ok, 4.0, None, &|| false).is_ok());
    }
}

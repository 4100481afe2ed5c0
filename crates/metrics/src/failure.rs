//! Failed-request samples: the answer to "why did requests fail?" that counts per
//! category cannot give. A handful of failed requests per (step, category) are kept
//! with what the user needs to recognise the cause (the URL, the status, the first
//! bytes of the body, the failing check and what it saw); `pado-results` writes them
//! to `failures.jsonl` in the result directory.
//!
//! Bounded everywhere: a worker keeps at most [`SAMPLES_PER_KIND`] per (step,
//! category) for the whole run, the aggregator keeps the first [`SAMPLES_PER_KIND`]
//! of those, so the file holds at most that many lines per (step, category) whatever
//! the run's length or failure rate.

use serde::{Deserialize, Serialize};

/// Samples kept per (step, error category) per run.
pub const SAMPLES_PER_KIND: usize = 3;
/// Bytes of a response body a sample keeps (before escaping).
pub const BODY_PREFIX: usize = 256;

/// One failed request, as it is stored and shown. Every text field is already
/// redacted (environment values, credentials) by the engine that made it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureSample {
    /// Step name (the series' name, without tags).
    pub step: String,
    /// Error category as `summary.json`'s `errors` names it: `http_<code>`, a
    /// transport kind (`connect_refused`...), or `check_failed`.
    pub category: String,
    /// Second of the run the request ended in.
    pub second: u32,
    /// Request method.
    pub method: String,
    /// Path and query of the request.
    pub url: String,
    /// Status code, 0 when no response arrived.
    pub status: u16,
    /// First bytes of the response body ([`BODY_PREFIX`]), lossy UTF-8 with control
    /// characters escaped; empty when there was none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// The first check that failed, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// What that check saw (`got 401`, `got 7`, `no match in 120 bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    /// Why a transport failure happened, when its category alone does not say (a
    /// TLS handshake: `certificate signed by an unknown issuer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The event a check on events (`sse.check`) failed on, when that check
    /// failed the request: which of the stream's events it was and what it held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<FailedEvent>,
}

/// Bytes of an event's data a failure sample keeps (before escaping).
pub const EVENT_DATA_PREFIX: usize = 200;

/// The event of a stream that failed a check on events, as a failure sample names
/// it: a user finds it in the stream by its place, its type and its id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedEvent {
    /// Its place in the stream: 0 for the first event dispatched.
    pub index: u64,
    /// Its type (its `event:` field; `message` when it had none).
    pub event: String,
    /// The stream's last event ID when it arrived (its `id:` field); empty when
    /// the stream set none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The first bytes of its data ([`EVENT_DATA_PREFIX`]), redacted, lossy UTF-8
    /// with control characters escaped.
    pub data: String,
}

impl FailedEvent {
    /// The event in words, for a report's line: `event 3 (type error, id 7):
    /// data "{…}"`.
    pub fn describe(&self) -> String {
        let id = if self.id.is_empty() {
            String::new()
        } else {
            format!(", id {}", self.id)
        };
        format!(
            "event {} (type {}{id}): data \"{}\"",
            self.index, self.event, self.data
        )
    }
}

impl FailureSample {
    /// Whether `self` and `o` count against the same bound.
    pub fn same_kind(&self, o: &FailureSample) -> bool {
        self.step == o.step && self.category == o.category
    }
}

/// Add `s` to `kept` unless [`SAMPLES_PER_KIND`] of its kind are already there.
/// Linear in `kept`, which is itself bounded; only failures reach it.
pub fn keep_bounded(kept: &mut Vec<FailureSample>, s: FailureSample) {
    if kept.iter().filter(|k| k.same_kind(&s)).count() < SAMPLES_PER_KIND {
        kept.push(s);
    }
}

/// Text of a body prefix fit for a terminal, a JSON file and an HTML cell: lossy
/// UTF-8, control characters (but not spaces) escaped as `\n`, `\t`, `\u{1b}`.
pub fn printable(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(step: &str, cat: &str, second: u32) -> FailureSample {
        FailureSample {
            step: step.into(),
            category: cat.into(),
            second,
            ..Default::default()
        }
    }

    #[test]
    fn keeps_the_first_few_per_step_and_category() {
        let mut kept = Vec::new();
        for i in 0..10 {
            keep_bounded(&mut kept, s("a", "http_500", i));
            keep_bounded(&mut kept, s("a", "reset", i));
            keep_bounded(&mut kept, s("b", "http_500", i));
        }
        assert_eq!(kept.len(), 3 * SAMPLES_PER_KIND);
        let a500: Vec<u32> = kept
            .iter()
            .filter(|k| k.step == "a" && k.category == "http_500")
            .map(|k| k.second)
            .collect();
        assert_eq!(a500, vec![0, 1, 2]);
    }

    #[test]
    fn printable_escapes_controls_and_keeps_text() {
        assert_eq!(printable(b"a\nb\t\x1b[31m"), "a\\nb\\t\\u{1b}[31m");
        assert_eq!(printable("상태 500".as_bytes()), "상태 500");
        assert_eq!(printable(&[0xff, b'x']), "\u{fffd}x");
    }
}
